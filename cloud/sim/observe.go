package sim

import (
	"time"

	"github.com/tether/tether/cloud"
)

// Change is one real change of an attachment in the simulated cloud.
type Change struct {
	Time     time.Time // Config.Now at the change
	Volume   cloud.VolumeID
	Instance cloud.InstanceID
	Node     cloud.NodeName // the node the instance backs
	Mode     cloud.AccessMode
	Attached bool   // true: attached; false: removed
	Reason   string // ReasonAttach, ReasonDetach, ReasonTerminate, ReasonDelete or ReasonConsole
}

// Reasons of a Change.
const (
	ReasonAttach    = "attach"    // an Attach call
	ReasonDetach    = "detach"    // a Detach call
	ReasonTerminate = "terminate" // the instance was terminated (Terminate, Replace)
	ReasonDelete    = "delete"    // the instance was deleted for good (Delete)
	ReasonConsole   = "console"   // detached from the cloud's side (ConsoleDetach)
)

// observers queues changes for the hooks; guarded by Cloud.mu.
type observers struct {
	sync       []func(Change) // ObserveSync: called under the lock
	hooks      []func(Change)
	staged     []Change // made, not yet committed (commitLocked)
	queue      []Change // committed, for the hooks
	delivering bool     // a goroutine is draining queue
}

// Observe registers f, called on every later real attachment change (not on
// idempotent repeats nor failed calls). Hooks run outside the Cloud's lock,
// one change at a time, in the order the changes happened, so a hook may
// call any Cloud method. When calls are concurrent, a change may be
// delivered by the goroutine of another call, shortly after its own call
// returned; without concurrency, a call returns after its changes were
// delivered. A hook must not panic and should be quick: it delays the call
// delivering it. With Config.StatePath set, only changes written to the
// state file are reported (a change whose write fails is undone, unseen).
func (c *Cloud) Observe(f func(Change)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.obs.hooks = append(c.obs.hooks, f)
}

// ObserveSync registers f, called on every later real attachment change
// synchronously, under the Cloud's lock, at the moment of the change (with
// Config.StatePath: once it is written), in the order of the changes. It is
// how a checker keeps a timeline that does not depend on delivery: f must
// be quick, must not block and must not call the Cloud.
func (c *Cloud) ObserveSync(f func(Change)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.obs.sync = append(c.obs.sync, f)
}

// recordLocked stages the change of the attachment of v to in, for the
// observers once it is committed.
func (c *Cloud) recordLocked(v *volume, in *instance, attached bool, reason string) {
	if len(c.obs.hooks) == 0 && len(c.obs.sync) == 0 {
		return
	}
	c.obs.staged = append(c.obs.staged, Change{
		Time:     c.now(),
		Volume:   v.id,
		Instance: in.id,
		Node:     in.node,
		Mode:     v.mode,
		Attached: attached,
		Reason:   reason,
	})
}

// publishLocked tells the synchronous observers about changes, which are
// now committed, and queues them for the others (deliver).
func (c *Cloud) publishLocked(changes []Change) {
	for _, ch := range changes {
		for _, f := range c.obs.sync {
			f(ch)
		}
	}
	if len(c.obs.hooks) > 0 {
		c.obs.queue = append(c.obs.queue, changes...)
	}
}

// deliver drains the change queue into the hooks unless another goroutine
// already is. It must be called without the lock held.
func (c *Cloud) deliver() {
	c.mu.Lock()
	if c.obs.delivering {
		c.mu.Unlock()
		return
	}
	c.obs.delivering = true
	for len(c.obs.queue) > 0 {
		batch, hooks := c.obs.queue, c.obs.hooks
		c.obs.queue = nil
		c.mu.Unlock()
		for _, ch := range batch {
			for _, h := range hooks {
				h(ch)
			}
		}
		c.mu.Lock()
	}
	c.obs.delivering = false
	c.mu.Unlock()
}
