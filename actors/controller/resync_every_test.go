package controller

import (
	"testing"
	"time"
)

// ResyncEvery resyncs what its selection returns once per period on the
// controller's clock, never before the first period, and ends with the
// controller (the rig's leak check sees its goroutine gone).
func TestResyncEvery(t *testing.T) {
	r := newRig(t)
	const every = time.Minute
	asked := make(chan struct{}, 16)
	r.ctl.ResyncEvery(every, func() func(kind, identity string) bool {
		asked <- struct{}{}
		return func(string, string) bool { return false }
	})
	select {
	case <-asked:
		t.Fatal("resynced before the first period passed")
	default:
	}
	for want := 1; want <= 3; want++ {
		// The loop's timer may not be set yet: advance until it fires,
		// within a real-time bound.
		deadline := time.Now().Add(10 * time.Second)
		got := false
		for !got && time.Now().Before(deadline) {
			r.clk.Advance(every)
			select {
			case <-asked:
				got = true
			case <-time.After(20 * time.Millisecond):
			}
		}
		if !got {
			t.Fatalf("resync %d never asked for its selection", want)
		}
	}
}
