package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// callLog is the provider the rig's controller talks to: the sim cloud,
// with every call naming an instance recorded (in the order they were
// made), so that tests can say which instances the controller called.
type callLog struct {
	cloud.Provider
	// batched: InstanceIDs resolves in batches (else Unsupported).
	batched atomic.Bool
	mu      sync.Mutex
	insts   []cloud.InstanceID
	// gate, if set, holds every Attach until it is closed (or the call's
	// context ends); attaching and peak count the attaches held at once.
	gate            chan struct{}
	attaching, peak int
	// listGate, if set, holds every InstanceVolumes call until it is
	// closed (or the call's context ends); listing counts those held.
	listGate chan struct{}
	listing  int
	// lister is what Listing says (cloud.Lister).
	lister cloud.Listing
	// asked counts VolumesAreAttached and InstanceVolumes calls.
	asked int
}

func (l *callLog) Listing() cloud.Listing { return l.lister }

// queries is how many VolumesAreAttached and InstanceVolumes calls were
// made.
func (l *callLog) queries() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asked
}

func (l *callLog) query() {
	l.mu.Lock()
	l.asked++
	l.mu.Unlock()
}

func (l *callLog) note(insts ...cloud.InstanceID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.insts = append(l.insts, insts...)
}

// mark is how many calls were recorded so far.
func (l *callLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.insts)
}

// namedSince counts the calls naming inst since mark.
func (l *callLog) namedSince(mark int, inst cloud.InstanceID) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, i := range l.insts[mark:] {
		if i == inst {
			n++
		}
	}
	return n
}

// enter counts a call in *running (and in *peak, if given, the most at
// once) until done is called, and holds it at *gate, if set, until the gate
// is closed or ctx ends (err).
func (l *callLog) enter(ctx context.Context, gate *chan struct{}, running, peak *int) (done func(), err error) {
	l.mu.Lock()
	g := *gate
	*running++
	if peak != nil {
		*peak = max(*peak, *running)
	}
	l.mu.Unlock()
	done = func() {
		l.mu.Lock()
		*running--
		l.mu.Unlock()
	}
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return done, ctx.Err()
		}
	}
	return done, nil
}

func (l *callLog) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	l.note(inst)
	done, err := l.enter(ctx, &l.gate, &l.attaching, &l.peak)
	defer done()
	if err != nil {
		return "", err
	}
	return l.Provider.Attach(ctx, vol, inst)
}

// attaches reports the attaches running now and the most at once.
func (l *callLog) attaches() (now, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attaching, l.peak
}

func (l *callLog) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	l.note(inst)
	return l.Provider.Detach(ctx, vol, inst)
}

func (l *callLog) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	l.query()
	for inst := range q {
		l.note(inst)
	}
	return l.Provider.VolumesAreAttached(ctx, q)
}

func (l *callLog) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	l.query()
	l.note(insts...)
	done, err := l.enter(ctx, &l.listGate, &l.listing, nil)
	defer done()
	if err != nil {
		return nil, err
	}
	return l.Provider.InstanceVolumes(ctx, insts)
}

// InstanceIDs resolves in batches once batched is set; before, it says
// it cannot (cloud.Unsupported), as a cloud without the call does.
func (l *callLog) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	if !l.batched.Load() {
		return nil, cloud.Unsupported("instance_ids")
	}
	return cloud.ResolveInstances(ctx, l.Provider, nodes)
}

// listings is how many InstanceVolumes calls run now.
func (l *callLog) listings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listing
}

// checkDetach judges every detach by tether at the moment it happens in
// the cloud (a synchronous observer): the persisted node status must not
// list the volume in VolumesAttached (I4), nor in VolumesInUse unless a
// ForceDetach was recorded for it there (I2). The rig's "mounts" are the
// VolumesInUse reports, so the persisted status is their ground truth.
func (r *rig) checkDetach(c sim.Change) {
	if c.Reason != sim.ReasonDetach {
		return
	}
	st, ok, err := r.store.NodeStatus(c.Node)
	if err != nil || !ok {
		return
	}
	if _, listed := st.VolumesAttached[c.Volume]; listed {
		r.violate("I4 violated: %s detached from %s while its persisted status lists it attached", c.Volume, c.Node)
	}
	if st.VolumesInUse[c.Volume] {
		forced := slices.ContainsFunc(r.rec.For(events.Ref{Kind: events.KindVolume, Name: string(c.Volume)}), func(e events.Event) bool {
			return e.Type == "ForceDetach" && e.Node == string(c.Node)
		})
		if !forced {
			r.violate("I2 violated: %s detached from %s while in use there", c.Volume, c.Node)
		}
	}
}

func (r *rig) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// takeViolations returns the violations found so far and forgets them (a
// test that breaks a rule on purpose takes them; any left fail the test).
func (r *rig) takeViolations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.violations
	r.violations = nil
	return out
}
