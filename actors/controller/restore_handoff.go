package controller

import (
	"sync"

	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// The restore's bulk read. Start spawns an actor for every volume of the
// store, and each read its own snapshot (ReadVolume: five reads, on Bolt
// five read transactions); with 100,000 volumes that was a fifth of the
// restart's CPU, queued on bbolt's metadata lock. In local mode Start now
// reads every snapshot at once (ReadVolumes, one read transaction) and
// hands each to the first incarnation of its volume; from the same read,
// each node actor's first message to its agent (its workloads, which the
// node actor read with one read per workload's volume).

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
func (e *env) handOff(ids []cloud.VolumeID, nodes []store.NodeSpec) {
	w := &e.restore
	if _, ok := e.store.(store.TableReader); !ok || len(ids)+len(nodes) == 0 || store.RemoteReads(e.store) {
		w.handoff.close()
		w.agents.close()
		return
	}
	t, err := readTables(e.store, ids)
	if err != nil {
		e.log.Warnf("restore: reading every volume at once failed, each volume reads its own: %v", err)
		w.handoff.close()
		w.agents.close()
		return
	}
	// Dropped when the restore is over (volumeSettled), at the latest
	// when liveness stops waiting for it: an actor that has not started
	// by then reads the store itself.
	w.handoff.fill(snapshotsOf(t, ids), e.clock.AfterFunc(e.cfg.RestoreGrace, w.handoff.close))
	// The node actors' first message to their agents, from the same
	// tables (agentMessages' rule: the revision read before them). An
	// agent applies only a revision at least as new as the one it has, so
	// a message that an apply after this read has overtaken changes nothing.
	names := make([]cloud.NodeName, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	msgs := workloadMessages(t.Revision, t.Workloads, nodes, t.Volumes, names)
	byNode := make(map[cloud.NodeName]*messages.NodeWorkloads, len(msgs))
	for i, m := range msgs {
		byNode[names[i]] = m
	}
	w.agents.fill(byNode, e.clock.AfterFunc(e.cfg.RestoreGrace, w.agents.close))
}

// handoff holds Start's reads until their actors take them: a volume's
// snapshot, a node's first message to its agent. Each serves one
// incarnation: the first of its actor since the controller was made. A
// later one (a supervisor restart, a respawn) reads the store afresh: its
// predecessor may have written since.
type handoff[K comparable, V any] struct {
	mu    sync.Mutex
	over  bool    // closed: nothing held, nothing tracked
	snaps map[K]V // not taken yet
	// started: the actors an incarnation started for (tracked from New
	// until close). Their read, even one made after that start, may miss
	// what that incarnation wrote: it is never handed.
	started map[K]bool
	timer   clock.Timer
}

// fill leaves snaps for the actors to come, but for the volumes whose
// actor has already started; t is the timer that closes h.
func (h *handoff[K, V]) fill(snaps map[K]V, t clock.Timer) {
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

// take is called by every incarnation of an actor as it starts: it
// returns the actor's read if one is held (and holds it no more) and this
// is the actor's first incarnation.
func (h *handoff[K, V]) take(id K) (V, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		var none V
		return none, false
	}
	if h.started == nil {
		h.started = map[K]bool{}
	}
	h.started[id] = true
	snap, ok := h.snaps[id]
	delete(h.snaps, id)
	if ok && len(h.snaps) == 0 {
		h.closeLocked() // the last one taken: nothing is left to hand
	}
	return snap, ok
}

// close drops whatever is held, for good.
func (h *handoff[K, V]) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
}

func (h *handoff[K, V]) closeLocked() {
	h.over, h.snaps, h.started = true, nil, nil
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}
