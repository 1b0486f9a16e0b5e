package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/reconciler"
)

// Calls keeps nothing once its calls have returned: a map keeps the room
// of its most entries, and after a fleet start that was ~45 bytes per
// volume at rest.
func TestCallsKeepNothingAtRest(t *testing.T) {
	c := NewCalls()
	results := make(chan *messages.MountFinished, 100)
	c.attach(func(m *messages.MountFinished) { results <- m })
	release := make(chan struct{})
	for i := range 100 {
		c.start(cloud.VolumeID(fmt.Sprintf("v%d", i)), reconciler.Running{Op: uint64(i), Kind: reconciler.OpPublish, UID: "w"}, func() error { <-release; return nil })
	}
	c.mu.Lock()
	n := len(c.running)
	c.mu.Unlock()
	if n != 100 {
		t.Fatalf("%d calls running, want 100", n)
	}
	close(release)
	for range 100 {
		<-results
	}
	if n := c.wait(5 * time.Second); n != 0 {
		t.Fatalf("%d calls still running", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		t.Fatalf("Calls keeps an empty map of %d calls after they all returned", len(c.running))
	}
}
