package process

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink that tests may read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A clean start, first or not, sends nothing to an actor that is not
// there: no [DeadLetter] in the log until every node is Ready. (The
// first start applied its nodes before their agents ran, and told each
// missing agent its workloads.)
func TestCleanStartNoDeadLetters(t *testing.T) {
	dir := t.TempDir()
	cleanupMounts(t, dir)
	for _, start := range []string{"first", "second"} {
		log := &syncBuffer{}
		cfg := DefaultConfig()
		cfg.DataDir, cfg.Durable, cfg.Nodes = dir, true, 3
		cfg.LogOutput, cfg.LogLevel = log, "info"
		e, err := StartEmbedded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pollUntil(t, "every node Ready", 30*time.Second, func() bool {
			for i := 1; i <= cfg.Nodes; i++ {
				if !strings.Contains(log.String(), fmt.Sprintf(`node \"n%d\" is Ready`, i)) {
					return false
				}
			}
			return true
		})
		out := log.String()
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "DeadLetter") {
			t.Fatalf("%s start logged dead letters:\n%s", start, out)
		}
	}
}
