package process

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud/testkit"
)

// A clean start, first or not, sends nothing to an actor that is not
// there: no [DeadLetter] in the log until every node is Ready. (The
// first start applied its nodes before their agents ran, and told each
// missing agent its workloads.)
func TestCleanStartNoDeadLetters(t *testing.T) {
	dir := t.TempDir()
	cleanupMounts(t, dir)
	for _, start := range []string{"first", "second"} {
		log := &testkit.Buffer{}
		cfg := DefaultConfig()
		cfg.DataDir, cfg.Durable, cfg.Nodes = dir, true, 3
		cfg.LogOutput, cfg.LogLevel = log, "info"
		e, err := StartEmbedded(cfg)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool {
			for i := 1; i <= cfg.Nodes; i++ {
				if !strings.Contains(log.String(), fmt.Sprintf(`node \"n%d\" is Ready`, i)) {
					return false
				}
			}
			return true
		}, "every node Ready")
		out := log.String()
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "DeadLetter") {
			t.Fatalf("%s start logged dead letters:\n%s", start, out)
		}
	}
}
