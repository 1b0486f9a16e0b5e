package etcdserver

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// tailLines is how many of etcd's last output lines errors quote.
const tailLines = 20

// tail passes etcd's output on to an optional writer and keeps its last
// lines for the errors.
type tail struct {
	to io.Writer // nil: discard

	mu      sync.Mutex
	partial []byte   // the line being written
	lines   []string // the last complete ones, at most tailLines
}

func newTail(to io.Writer) *tail { return &tail{to: to} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.to != nil {
		_, _ = t.to.Write(p) // a failing log must not stop etcd's output
	}
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.lines) > tailLines {
		t.lines = append([]string(nil), t.lines[len(t.lines)-tailLines:]...)
	}
	return len(p), nil
}

// last returns the last lines, the incomplete one included.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := strings.Join(t.lines, "\n")
	if len(t.partial) > 0 {
		out += "\n" + string(t.partial)
	}
	return out
}

// contains reports whether the last lines contain s.
func (t *tail) contains(s string) bool { return strings.Contains(t.last(), s) }
