package sim

import (
	"cmp"
	"maps"
	"slices"
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
	// ReasonSnapshot marks no change: an attachment current when
	// ObserveSyncFrom registered its hook.
	ReasonSnapshot = "snapshot"
)

// observers queues changes for the hooks; guarded by Cloud.mu.
type observers struct {
	sync       []syncHook // ObserveSync, ObserveSyncFrom: called under the lock
	lastID     uint64     // of the last syncHook registered
	hooks      []func(Change)
	staged     []Change // made, not yet committed (commitLocked)
	unwritten  []Change // committed in memory, waiting for the state write, oldest first
	queue      []Change // committed, for the hooks
	delivering bool     // a goroutine is draining queue
}

// syncHook is a synchronous observer; id tells it apart for removal.
type syncHook struct {
	id uint64
	f  func(Change)
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
	c.addSyncLocked(f)
}

// ObserveSyncFrom is ObserveSync for an observer that starts from the
// current state, and can stop: it registers f and returns, taken at the
// same moment, current, the attachments that f's changes apply to, and
// stop, which unregisters f. current holds every attachment as a Change
// with Attached set, Reason ReasonSnapshot and the Time of the call,
// sorted by volume, then instance; applying to it, in order, the changes
// f is then called with gives the ground truth after each. With
// Config.StatePath, current is the written state: a change made but not
// yet written is not in it, and f hears of it once it is written (a change
// whose write fails is in neither). f must be quick, must not block and
// must not call the Cloud. Once stop has returned f is not called again;
// stop may be called more than once, not from f.
func (c *Cloud) ObserveSyncFrom(f func(Change)) (current []Change, stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.addSyncLocked(f)
	stop = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.obs.sync = slices.DeleteFunc(c.obs.sync, func(h syncHook) bool { return h.id == id })
	}
	return c.writtenAttachmentsLocked(), stop
}

// addSyncLocked registers the synchronous observer f and returns its id.
func (c *Cloud) addSyncLocked(f func(Change)) uint64 {
	c.obs.lastID++
	c.obs.sync = append(c.obs.sync, syncHook{id: c.obs.lastID, f: f})
	return c.obs.lastID
}

// writtenAttachmentsLocked returns the attachments as the synchronous
// observers know them (see ObserveSyncFrom): those in memory, with the
// changes not yet published undone, newest first.
func (c *Cloud) writtenAttachmentsLocked() []Change {
	type key struct {
		vol  cloud.VolumeID
		inst cloud.InstanceID
	}
	now := c.now()
	cur := make(map[key]Change)
	for _, v := range c.vols {
		for id := range v.attached {
			var node cloud.NodeName
			if in, ok := c.insts[id]; ok {
				node = in.node
			}
			cur[key{v.id, id}] = Change{Time: now, Volume: v.id, Instance: id, Node: node, Mode: v.mode, Attached: true, Reason: ReasonSnapshot}
		}
	}
	for _, ch := range slices.Backward(slices.Concat(c.obs.unwritten, c.obs.staged)) {
		k := key{ch.Volume, ch.Instance}
		if ch.Attached {
			delete(cur, k)
			continue
		}
		ch.Time, ch.Attached, ch.Reason = now, true, ReasonSnapshot
		cur[k] = ch
	}
	out := slices.Collect(maps.Values(cur))
	slices.SortFunc(out, func(a, b Change) int {
		return cmp.Or(cmp.Compare(a.Volume, b.Volume), cmp.Compare(a.Instance, b.Instance))
	})
	return out
}

// recordLocked stages the change of the attachment of v to in, for the
// observers once it is committed.
func (c *Cloud) recordLocked(v *volume, in *instance, attached bool, reason string) {
	// With a state file, changes are kept until written even without
	// observers: ObserveSyncFrom may come before the write.
	if len(c.obs.hooks) == 0 && len(c.obs.sync) == 0 && c.state == nil {
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
		for _, h := range c.obs.sync {
			h.f(ch)
		}
	}
	if len(c.obs.hooks) > 0 {
		c.obs.queue = append(c.obs.queue, changes...)
	}
}

// publishWrittenLocked publishes changes, the oldest of those waiting for
// their write (unwritten), now written.
func (c *Cloud) publishWrittenLocked(changes []Change) {
	c.obs.unwritten = c.obs.unwritten[len(changes):]
	if len(c.obs.unwritten) == 0 {
		c.obs.unwritten = nil
	}
	c.publishLocked(changes)
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
