package controller

import (
	"sync"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// When heartbeats count. A starting controller restores every volume actor
// from the store and the cloud: bulk work that, with many volumes, takes
// longer than NotReadyAfter, and during which neither the agents' reports
// nor the node actors' own timers can be trusted to be on time (the agents
// of a process may not even run yet). So node actors judge heartbeats from
// the end of the restore (every volume actor of Start restored, or
// stopped), and at the latest from RestoreGrace after Start: a restore
// that never ends must not keep NotReady nodes Ready for ever (force
// detach depends on it).

// restoreWatch counts the volume actors of Start not restored yet.
type restoreWatch struct {
	mu      sync.Mutex
	pending map[cloud.VolumeID]bool
	// until: the latest moment liveness waits for (Start + RestoreGrace).
	until time.Time
	// handoff: Start's snapshots for its volume actors
	// (restore_handoff.go); closed when the restore is over.
	handoff handoff[cloud.VolumeID, VolumeSnapshot]
	// agents: Start's first messages of the node actors to their agents;
	// closed once all are taken (node actors may start after the volumes
	// have restored), at the latest at RestoreGrace.
	agents handoff[cloud.NodeName, *messages.NodeWorkloads]
}

// begin records the volumes Start spawns; must come before they can answer.
func (e *env) beginRestore(vols []cloud.VolumeID) {
	w := &e.restore
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = make(map[cloud.VolumeID]bool, len(vols))
	for _, v := range vols {
		w.pending[v] = true
	}
	w.until = e.clock.Now().Add(e.cfg.RestoreGrace)
	if len(w.pending) == 0 {
		e.started.Store(e.clock.Now().UnixNano())
		w.handoff.close()
	}
}

// volumeSettled: a volume actor of Start restored, or stopped. The last
// one starts liveness.
func (e *env) volumeSettled(v cloud.VolumeID) {
	e.verify.settled(v)
	w := &e.restore
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.pending[v] {
		return
	}
	delete(w.pending, v)
	if len(w.pending) == 0 && e.started.Load() == 0 {
		e.started.Store(e.clock.Now().UnixNano())
		w.handoff.close() // every volume of Start has started: nothing is left to take
	}
}

// livenessFrom is the moment from which agents' heartbeats are expected:
// the end of the controller's restore, or now while it runs (at most until
// Start + RestoreGrace).
func (e *env) livenessFrom() time.Time {
	if ns := e.started.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	e.restore.mu.Lock()
	until := e.restore.until
	e.restore.mu.Unlock()
	if now := e.clock.Now(); until.IsZero() || now.Before(until) {
		return now
	}
	return until
}

// Restored reports whether every volume actor spawned by Start has rebuilt
// itself from the store and the cloud (or stopped).
func (c *Controller) Restored() bool { return c.env.started.Load() != 0 }
