package agent

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/reconciler"
)

// Calls tracks the mount calls one node's agent has running in this
// process, by volume (so one Calls serves one node, never several). It outlives the agent's incarnations (a restart by
// the supervisor, or Stop then Start with the same Calls) because the calls
// do: a mount(2) stuck on a hung filesystem cannot be interrupted, only
// abandoned. A new incarnation learns which volumes such calls still hold
// (reconciler.Restored.Running), and each call's result goes to whichever
// incarnation is current when it returns. Calls never runs two calls on one
// volume at once.
type Calls struct {
	mu sync.Mutex
	// running is nil while empty: a map keeps the room of its most
	// entries, and no call runs at rest.
	running map[cloud.VolumeID]*call
	// deliver hands a result to the current incarnation (nil between
	// incarnations: the next one's disk scan accounts for the call).
	deliver func(*messages.MountFinished)
	gen     uint64
	// spawn runs a call's body off the caller (nil: a goroutine).
	spawn func(vol cloud.VolumeID, r reconciler.Running, run func())
}

type call struct {
	reconciler.Running
	done chan struct{}
}

// NewCalls returns an empty registry.
func NewCalls() *Calls { return &Calls{} }

// NewCallsOn returns an empty registry whose calls (call r on vol) run
// through spawn, which must run run at most once, later, off the caller's
// turn: the simulation's scheduler, which decides when (and whether) a
// call returns.
func NewCallsOn(spawn func(vol cloud.VolumeID, r reconciler.Running, run func())) *Calls {
	return &Calls{spawn: spawn}
}

// attach makes deliver the receiver of results from now on and returns the
// calls running now, with a token for detach. Every call returns either
// before attach (it is not listed) or after it (its result is delivered).
func (c *Calls) attach(deliver func(*messages.MountFinished)) (map[cloud.VolumeID]reconciler.Running, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.deliver = deliver
	out := make(map[cloud.VolumeID]reconciler.Running, len(c.running))
	for v, cl := range c.running {
		out[v] = cl.Running
	}
	return out, c.gen
}

// detach stops delivering to the incarnation that got token.
func (c *Calls) detach(token uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == token {
		c.deliver = nil
	}
}

// start runs f as call r on vol in a goroutine of its own (or through
// spawn), which delivers its result when f returns, however late. While an earlier call on vol
// is still running, f is not run and a failure is delivered at once.
func (c *Calls) start(vol cloud.VolumeID, r reconciler.Running, f func() error) {
	res := &messages.MountFinished{VolumeId: string(vol), Op: r.Op}
	c.mu.Lock()
	if prev, ok := c.running[vol]; ok {
		deliver := c.deliver
		c.mu.Unlock()
		res.Error = fmt.Sprintf("%s of volume %s refused: a %s of it started at %s is still running", r.Kind, vol, prev.Kind, prev.Since.Format(time.RFC3339))
		if deliver != nil {
			deliver(res)
		}
		return
	}
	cl := &call{Running: r, done: make(chan struct{})}
	if c.running == nil {
		c.running = map[cloud.VolumeID]*call{}
	}
	c.running[vol] = cl
	c.mu.Unlock()
	spawn := c.spawn
	if spawn == nil {
		spawn = func(_ cloud.VolumeID, _ reconciler.Running, run func()) { go run() }
	}
	spawn(vol, r, func() {
		defer close(cl.done)
		if err := f(); err != nil {
			res.Error, res.Terminal = err.Error(), errors.Is(err, cloud.ErrTerminal)
		}
		c.mu.Lock()
		delete(c.running, vol)
		if len(c.running) == 0 {
			c.running = nil
		}
		deliver := c.deliver
		c.mu.Unlock()
		if deliver != nil {
			deliver(res)
		}
	})
}

// wait waits, at most d in real time, for the calls running now to return
// and reports how many are still running.
func (c *Calls) wait(d time.Duration) int {
	c.mu.Lock()
	var pending []chan struct{}
	for _, cl := range c.running {
		pending = append(pending, cl.done)
	}
	c.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for i, done := range pending {
		select {
		case <-done:
		case <-timer.C:
			left := 0
			for _, d := range pending[i:] {
				select {
				case <-d:
				default:
					left++
				}
			}
			return left
		}
	}
	return 0
}
