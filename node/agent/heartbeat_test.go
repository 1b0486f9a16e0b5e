package agent

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/actors/runtime/clock"
)

// The beat runs on its own timers: every period, with nobody else doing
// anything (a blocked mailbox included), and never after stop.
func TestBeaterBeatsOnItsOwn(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var beats atomic.Int32
	b := &beater{}
	b.start(clk, 10*time.Second, func() { beats.Add(1) })
	clk.Advance(9 * time.Second)
	if got := beats.Load(); got != 0 {
		t.Fatalf("%d beats before the first period", got)
	}
	clk.Advance(41 * time.Second)
	if got := beats.Load(); got != 5 {
		t.Fatalf("%d beats in 50s, want 5", got)
	}
	b.stop()
	clk.Advance(time.Minute)
	if got := beats.Load(); got != 5 {
		t.Fatalf("%d beats after stop, want 5", got)
	}
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers left after stop", n)
	}
}
