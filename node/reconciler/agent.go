package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
)

// inflight is a mount call started and not yet returned.
type inflight struct {
	op      uint64
	kind    OpKind
	uid     string
	started time.Time
}

type opKey struct {
	vol  VolumeID
	uid  string
	kind OpKind
}

// Agent is the machine of one node agent. Use New, then step Restored.
type Agent struct {
	cfg          Config
	restored     bool
	desiredKnown bool
	statusKnown  bool
	desired      []desiredWorkload // by UID, each once
	uses         []use             // of the desired workloads, in their order
	wanted       []int32           // wantedBy's answer for desired; nil: not computed yet
	seen         seen              // the latest node status: VolumesAttached and VolumesInUse
	stale        *StatusChanged    // BreakStaleStatus only: the latest status received
	mounts       mounts
	reported     []VolumeID
	reportedOnce bool
	reportSeq    uint64 // of the last ReportInUse
	ackedSeq     uint64 // InUseSeq of the last StatusChanged
	desiredRev   uint64 // Revision of the last DesiredChanged applied
	// busy, stuck and backoffs are nil while empty: a map keeps the room
	// of its most entries, and these are empty at rest (busy kept ~130
	// bytes per volume after a fleet start).
	busy     map[VolumeID]inflight
	stuck    map[VolumeID]inflight // past their deadline, or an earlier incarnation's: not returned yet
	backoffs map[opKey]*backoff.Backoff
	nextOp   uint64
}

// New returns an agent machine. seqBase starts its report and operation
// numbers, so that an incarnation's numbers never match an earlier one's:
// results and statuses meant for an earlier incarnation may still be queued
// (the shell passes a random value).
func New(cfg Config, seqBase uint64) *Agent {
	return &Agent{
		cfg:       cfg,
		reportSeq: seqBase,
		nextOp:    seqBase,
		mounts:    newMounts(),
	}
}

// Step applies one event at time now and returns the effects, in order.
func (a *Agent) Step(now time.Time, ev Event) []Effect {
	var effs []Effect
	switch e := ev.(type) {
	case Restored:
		effs = a.onRestored(now, e)
	case DesiredChanged:
		a.onDesired(now, e)
	case StatusChanged:
		a.onStatus(e)
	case OpDone:
		effs = a.onOpDone(now, e)
	case Tick:
	default:
		panic(fmt.Sprintf("agent: unknown event %T", ev))
	}
	effs = append(effs, a.overdue(now)...)
	return coalesce(append(effs, a.reconcile(now)...))
}

func (a *Agent) onStatus(e StatusChanged) {
	if a.cfg.BreakStaleStatus {
		e = a.staleStatus(e)
	}
	a.statusKnown = true
	if !a.seen.same(e) {
		a.seen = seenFrom(e)
	}
	a.ackedSeq = e.InUseSeq
}

// staleStatus is e as BreakStaleStatus's agent acts on it: VolumesAttached
// still lists, at their old devices, the volumes the status before e
// listed and e withdrew.
func (a *Agent) staleStatus(e StatusChanged) StatusChanged {
	prev := a.stale
	a.stale = &e
	if prev == nil {
		return e
	}
	out := e
	out.Attached = make(map[VolumeID]string, len(e.Attached)+len(prev.Attached))
	for v, d := range prev.Attached {
		out.Attached[v] = d
	}
	for v, d := range e.Attached {
		out.Attached[v] = d
	}
	return out
}

func (a *Agent) onRestored(now time.Time, e Restored) []Effect {
	a.restored = true
	kept, partial := 0, 0
	var hung []Effect
	for _, v := range sortedVols(e.Stages) {
		f := e.Stages[v]
		a.mounts.setStage(v, Uncertain)
		if f.Mounted {
			a.mounts.setStage(v, Mounted)
			kept++
		} else {
			partial++
		}
		if f.Hung {
			hung = append(hung, hungRecord(v, "", "staged mount"))
		}
	}
	for _, k := range sortedPubs(e.Publishes) {
		f := e.Publishes[k]
		a.mounts.setPub(k, Uncertain)
		if f.Mounted {
			a.mounts.setPub(k, Mounted)
			kept++
		} else {
			partial++
		}
		if f.Hung {
			hung = append(hung, hungRecord(k.Volume, k.UID, "published mount"))
		}
	}
	effs := append(hung, a.restoreRunning(now, e.Running)...)
	if kept+partial == 0 {
		return effs
	}
	return append([]Effect{Record{Type: EventReconstructed,
		Message: fmt.Sprintf("found %d working and %d half-done mounts on disk: keeping what is wanted, completing or rolling back the rest", kept, partial)}}, effs...)
}

func (a *Agent) onOpDone(now time.Time, e OpDone) []Effect {
	if in, ok := a.stuck[e.Volume]; ok && in.op == e.Op {
		return a.onStuckReturned(now, e, in)
	}
	in, ok := a.busy[e.Volume]
	if !ok || in.op != e.Op {
		return nil // a result this incarnation did not ask for: the disk scan already accounted for it
	}
	a.busy = without(a.busy, e.Volume)
	key := opKey{e.Volume, in.uid, in.kind}
	pk := PubKey{in.uid, e.Volume}
	if e.Err != "" {
		switch in.kind {
		case OpStage, OpUnstage:
			a.mounts.setStage(e.Volume, Uncertain)
		default:
			a.mounts.setPub(pk, Uncertain)
		}
		return a.failed(now, key, e.Err, e.Terminal)
	}
	a.backoffs = without(a.backoffs, key)
	switch in.kind {
	case OpStage:
		a.mounts.setStage(e.Volume, Mounted)
	case OpUnstage:
		a.mounts.deleteStage(e.Volume)
	case OpPublish:
		a.mounts.setPub(pk, Mounted)
		return []Effect{Record{Type: EventSuccessfulMount, Workload: in.uid, Volume: e.Volume,
			Message: fmt.Sprintf("MountVolume.SetUp succeeded for volume %q", e.Volume)}}
	case OpUnpublish:
		a.mounts.deletePub(pk)
	}
	return nil
}

func (a *Agent) failed(now time.Time, key opKey, msg string, terminal bool) []Effect {
	b := a.backoffs[key]
	if b == nil {
		b = &backoff.Backoff{}
		a.backoffs = with(a.backoffs, key, b)
	}
	u := 0.0
	if a.cfg.Rand != nil {
		u = a.cfg.Rand()
	}
	var at time.Time
	var also string
	if terminal {
		at, also = b.FailTerminal(now, a.cfg.Backoff, u), "; trying again will not help until the cause is fixed"
	} else {
		at = b.Fail(now, a.cfg.Backoff, u)
	}
	rec := Record{Type: failedType(key.kind), Workload: key.uid, Volume: key.vol, Warning: true,
		Message: fmt.Sprintf("%s of volume %q failed: %s (failure %d; no retry for %s%s)", key.kind, key.vol, msg, b.Failures(), at.Sub(now), also)}
	if key.uid != "" || key.kind != OpStage {
		return []Effect{rec}
	}
	// A stage serves every workload that wants the volume: each of them
	// waits for it, and hears why.
	users := a.usersOf(a.wantedBy(), key.vol)
	if len(users) == 0 {
		return []Effect{rec}
	}
	effs := make([]Effect, 0, 1+len(users))
	effs = append(effs, rec) // on the node, as before
	for _, i := range users {
		r := rec
		r.Workload = a.desired[a.uses[i].w].uid
		effs = append(effs, r)
	}
	return effs
}

// coalesce keeps only the earliest WakeAt, last.
func coalesce(effs []Effect) []Effect {
	return clock.KeepEarliest(effs,
		func(e Effect) (time.Time, bool) { w, ok := e.(WakeAt); return w.At, ok },
		func(t time.Time) Effect { return WakeAt{At: t} })
}

// with sets m[k] = v, making m if it is nil.
func with[K comparable, V any](m map[K]V, k K, v V) map[K]V {
	if m == nil {
		m = map[K]V{}
	}
	m[k] = v
	return m
}

// without deletes m[k] and returns nil once m is empty, so that an empty
// map does not keep the room of its most entries.
func without[K comparable, V any](m map[K]V, k K) map[K]V {
	delete(m, k)
	if len(m) == 0 {
		return nil
	}
	return m
}

func sortedVols[T any](m map[VolumeID]T) []VolumeID {
	out := make([]VolumeID, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// Mount is one stage (UID "") or publish in Status.
type Mount struct {
	Volume VolumeID
	UID    string
	State  MountState
}

// Status is a read-only view of the machine.
type Status struct {
	Ready  bool // disk scanned, desired state and node status known
	InUse  []VolumeID
	Seq    uint64 // of the last VolumesInUse report
	Mounts []Mount
}

// Status returns a copy of the machine's state, mounts sorted.
func (a *Agent) Status() Status {
	st := Status{Ready: a.restored && a.desiredKnown && a.statusKnown, InUse: slices.Clone(a.reported), Seq: a.reportSeq}
	a.mounts.all(func(v VolumeID, uid string, s MountState) {
		st.Mounts = append(st.Mounts, Mount{Volume: v, UID: uid, State: s})
	})
	slices.SortFunc(st.Mounts, func(x, y Mount) int {
		if x.Volume != y.Volume {
			return strings.Compare(string(x.Volume), string(y.Volume))
		}
		return strings.Compare(x.UID, y.UID)
	})
	return st
}
