package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/reconciler"
)

// Calls: a second call on a volume with one still running is refused at
// once; a new incarnation sees the running call and gets its result; Stop's
// wait is bounded.
func TestCallsOneAtATimePerVolume(t *testing.T) {
	c := NewCalls()
	results := make(chan *messages.MountFinished, 4)
	_, first := c.attach(func(m *messages.MountFinished) { results <- m })
	release := make(chan struct{})
	defer close(release)
	c.start("v1", reconciler.Running{Op: 1, Kind: reconciler.OpStage, Since: start}, func() error { <-release; return nil })

	c.start("v1", reconciler.Running{Op: 2, Kind: reconciler.OpUnstage}, func() error { t.Error("ran beside a running call"); return nil })
	if m := <-results; m.Op != 2 || !strings.Contains(m.Error, "still running") {
		t.Fatalf("second call: %+v, want refused", m)
	}
	if n := c.wait(10 * time.Millisecond); n != 1 {
		t.Fatalf("wait: %d calls left, want 1", n)
	}

	c.detach(first)
	running, _ := c.attach(func(m *messages.MountFinished) { results <- m })
	if r, ok := running["v1"]; !ok || r.Op != 1 || r.Kind != reconciler.OpStage || !r.Since.Equal(start) {
		t.Fatalf("running = %+v, want the stage of v1", running)
	}
	c.detach(first) // an outdated token changes nothing
	release <- struct{}{}
	select {
	case m := <-results:
		if m.Op != 1 || m.Error != "" {
			t.Fatalf("result %+v, want op 1 ok", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the released call's result was not delivered to the new incarnation")
	}
	if n := c.wait(5 * time.Second); n != 0 {
		t.Fatalf("wait: %d calls left, want 0", n)
	}
}
