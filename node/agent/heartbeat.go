package agent

import (
	"sync"
	"time"

	"github.com/tether/tether/actors/runtime/clock"
)

// beater sends the agent's heartbeat on its own timer chain, off the
// agent's mailbox: liveness never waits behind bulk work (thousands of
// workloads to reconcile after a restart, a slow mount table), as the
// kubelet renews its node lease apart from its pod sync loop. What the
// heartbeat also does through the mailbox (asking for the desired state,
// repeating the in-use report) may be late; the beat itself is not.
type beater struct {
	mu      sync.Mutex
	stopped bool
	timer   clock.Timer
}

// start calls beat every period on c until stop. beat must not block.
func (b *beater) start(c clock.Clock, every time.Duration, beat func()) {
	var tick func()
	tick = func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stopped {
			return
		}
		beat()
		b.timer = c.AfterFunc(every, tick)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.timer = c.AfterFunc(every, tick)
	}
}

// stop ends the chain; no beat starts after it returns.
func (b *beater) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
}
