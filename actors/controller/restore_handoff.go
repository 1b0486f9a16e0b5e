package controller

import (
	"sync"

	"github.com/tether/tether/actors/clock"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// The restore's bulk read. Start spawns an actor for every volume of the
// store, and each read its own snapshot (ReadVolume: five reads, on Bolt
// five read transactions); with 100,000 volumes that was a fifth of the
// restart's CPU, queued on bbolt's metadata lock. In local mode Start now
// reads every snapshot at once (ReadVolumes, one read transaction) and
// hands each to the first incarnation of its volume.

// handOff reads the snapshots of Start's volumes (ids) and leaves them for
// their actors. Local mode only, and only on a store that reads all its
// tables at once (store.TableReader) in this process (not
// store.RemoteReads): a wrapped store (a test's gate, a chaos recorder)
// keeps the per-volume reads it may intercept. A failed read is not
// Start's failure: each actor then reads the store itself, and fails and
// retries on its own as before.
//
// The snapshots are read BEFORE the actors claim their volumes, where an
// actor's own read comes after its claim. In local mode that is safe:
// this process is the store's only writer (bbolt's file lock; a Memory is
// its own), and a snapshot is handed only to the first incarnation of its
// volume in this controller (handoff.take), so no actor of this
// controller wrote anything for that volume before it was read. A
// controller stopped earlier in this process cancelled its cloud calls
// first, and an operation whose intent is written after the cancel is
// never sent (callCloud), so every intent whose operation may land is in
// the snapshot. What changes after the read reaches the actor as messages
// that come after its Started: the desired state with a higher revision
// (tellDesired), node statuses as the node actors' notifications; exactly
// as for an actor that read the store itself just before the change.
// Claims order concurrent activations of one volume, which only
// distributed mode has, and it never comes here.
func (e *env) handOff(ids []cloud.VolumeID) {
	h := &e.restore.handoff
	if _, ok := e.store.(store.TableReader); !ok || len(ids) == 0 || store.RemoteReads(e.store) {
		h.close()
		return
	}
	snaps, err := ReadVolumes(e.store, ids)
	if err != nil {
		e.log.Warnf("restore: reading every volume at once failed, each volume reads its own: %v", err)
		h.close()
		return
	}
	// Dropped when the restore is over (volumeSettled), at the latest
	// when liveness stops waiting for it: an actor that has not started
	// by then reads the store itself.
	h.fill(snaps, e.clock.AfterFunc(e.cfg.RestoreGrace, h.close))
}

// handoff holds Start's snapshots until their actors take them. Each
// serves one incarnation: the first of its volume since the controller
// was made. A later one (a supervisor restart, a respawn) reads the store
// afresh: its predecessor may have written since.
type handoff struct {
	mu    sync.Mutex
	over  bool                              // closed: nothing held, nothing tracked
	snaps map[cloud.VolumeID]VolumeSnapshot // not taken yet
	// started: the volumes an incarnation started for (tracked from New
	// until close). Their snapshot, even one read after that start, may
	// miss what that incarnation wrote: it is never handed.
	started map[cloud.VolumeID]bool
	timer   clock.Timer
}

// fill leaves snaps for the actors to come, but for the volumes whose
// actor has already started; t is the timer that closes h.
func (h *handoff) fill(snaps map[cloud.VolumeID]VolumeSnapshot, t clock.Timer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		t.Stop()
		return
	}
	for id := range h.started {
		delete(snaps, id)
	}
	h.snaps, h.timer = snaps, t
}

// take is called by every incarnation of a volume actor as it starts: it
// returns the volume's snapshot if one is held (and holds it no more) and
// this is the volume's first incarnation.
func (h *handoff) take(id cloud.VolumeID) (VolumeSnapshot, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		return VolumeSnapshot{}, false
	}
	if h.started == nil {
		h.started = map[cloud.VolumeID]bool{}
	}
	h.started[id] = true
	snap, ok := h.snaps[id]
	delete(h.snaps, id)
	return snap, ok
}

// close drops whatever is held, for good.
func (h *handoff) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.over, h.snaps, h.started = true, nil, nil
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}
