package agent

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tether/tether/actors/backoff"
	"github.com/tether/tether/actors/clock"
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

type desiredWorkload struct {
	uses     []Use // by volume, each once (a slice: a map per workload cost ~250 bytes of heap per volume at rest)
	since    time.Time
	timedOut bool
}

// Agent is the machine of one node agent. Use New, then step Restored.
type Agent struct {
	cfg          Config
	restored     bool
	desiredKnown bool
	statusKnown  bool
	desired      map[string]*desiredWorkload
	wanted       map[VolumeID]map[string]bool // wantedBy's answer for desired; nil: not computed yet
	attached     map[VolumeID]string
	inUseAcked   map[VolumeID]bool
	stages       map[VolumeID]MountState
	pubs         map[PubKey]MountState
	reported     []VolumeID
	reportedOnce bool
	reportSeq    uint64 // of the last ReportInUse
	ackedSeq     uint64 // InUseSeq of the last StatusChanged
	desiredRev   uint64 // Revision of the last DesiredChanged applied
	busy         map[VolumeID]inflight
	stuck        map[VolumeID]inflight // past their deadline, or an earlier incarnation's: not returned yet
	backoffs     map[opKey]*backoff.Backoff
	nextOp       uint64
}

// New returns an agent machine. seqBase starts its report and operation
// numbers, so that an incarnation's numbers never match an earlier one's:
// results and statuses meant for an earlier incarnation may still be queued
// (the shell passes a random value).
func New(cfg Config, seqBase uint64) *Agent {
	return &Agent{
		cfg:        cfg,
		reportSeq:  seqBase,
		nextOp:     seqBase,
		desired:    map[string]*desiredWorkload{},
		attached:   map[VolumeID]string{},
		inUseAcked: map[VolumeID]bool{},
		stages:     map[VolumeID]MountState{},
		pubs:       map[PubKey]MountState{},
		busy:       map[VolumeID]inflight{},
		stuck:      map[VolumeID]inflight{},
		backoffs:   map[opKey]*backoff.Backoff{},
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
		a.statusKnown = true
		a.attached = maps.Clone(e.Attached)
		a.inUseAcked = maps.Clone(e.InUse)
		a.ackedSeq = e.InUseSeq
	case OpDone:
		effs = a.onOpDone(now, e)
	case Tick:
	default:
		panic(fmt.Sprintf("agent: unknown event %T", ev))
	}
	effs = append(effs, a.overdue(now)...)
	return coalesce(append(effs, a.reconcile(now)...))
}

func (a *Agent) onRestored(now time.Time, e Restored) []Effect {
	a.restored = true
	kept, partial := 0, 0
	var hung []Effect
	for _, v := range sortedVols(e.Stages) {
		f := e.Stages[v]
		a.stages[v] = Uncertain
		if f.Mounted {
			a.stages[v], kept = Mounted, kept+1
		} else {
			partial++
		}
		if f.Hung {
			hung = append(hung, hungRecord(v, "", "staged mount"))
		}
	}
	for _, k := range sortedPubs(e.Publishes) {
		f := e.Publishes[k]
		a.pubs[k] = Uncertain
		if f.Mounted {
			a.pubs[k], kept = Mounted, kept+1
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

func (a *Agent) onDesired(now time.Time, e DesiredChanged) {
	if e.Revision < a.desiredRev {
		return // an older snapshot, overtaken
	}
	a.desiredRev = e.Revision
	a.desiredKnown = true
	next := map[string]*desiredWorkload{}
	for _, w := range e.Workloads {
		d := a.desired[w.UID]
		if d == nil {
			d = &desiredWorkload{since: now}
		}
		d.uses = usesOf(w.Volumes)
		next[w.UID] = d
	}
	a.desired, a.wanted = next, nil
}

func (a *Agent) onOpDone(now time.Time, e OpDone) []Effect {
	if in, ok := a.stuck[e.Volume]; ok && in.op == e.Op {
		return a.onStuckReturned(now, e, in)
	}
	in, ok := a.busy[e.Volume]
	if !ok || in.op != e.Op {
		return nil // a result this incarnation did not ask for: the disk scan already accounted for it
	}
	delete(a.busy, e.Volume)
	key := opKey{e.Volume, in.uid, in.kind}
	pk := PubKey{in.uid, e.Volume}
	if e.Err != "" {
		switch in.kind {
		case OpStage, OpUnstage:
			a.stages[e.Volume] = Uncertain
		default:
			a.pubs[pk] = Uncertain
		}
		return a.failed(now, key, e.Err)
	}
	delete(a.backoffs, key)
	switch in.kind {
	case OpStage:
		a.stages[e.Volume] = Mounted
	case OpUnstage:
		delete(a.stages, e.Volume)
	case OpPublish:
		a.pubs[pk] = Mounted
		return []Effect{Record{Type: EventSuccessfulMount, Workload: in.uid, Volume: e.Volume,
			Message: fmt.Sprintf("MountVolume.SetUp succeeded for volume %q", e.Volume)}}
	case OpUnpublish:
		delete(a.pubs, pk)
	}
	return nil
}

func (a *Agent) failed(now time.Time, key opKey, msg string) []Effect {
	b := a.backoffs[key]
	if b == nil {
		b = &backoff.Backoff{}
		a.backoffs[key] = b
	}
	u := 0.0
	if a.cfg.Rand != nil {
		u = a.cfg.Rand()
	}
	at := b.Fail(now, a.cfg.Backoff, u)
	return []Effect{Record{Type: failedType(key.kind), Workload: key.uid, Volume: key.vol, Warning: true,
		Message: fmt.Sprintf("%s of volume %q failed: %s (failure %d; no retry for %s)", key.kind, key.vol, msg, b.Failures(), at.Sub(now))}}
}

// coalesce keeps only the earliest WakeAt, last.
func coalesce(effs []Effect) []Effect {
	return clock.KeepEarliest(effs,
		func(e Effect) (time.Time, bool) { w, ok := e.(WakeAt); return w.At, ok },
		func(t time.Time) Effect { return WakeAt{At: t} })
}

// usesOf is a workload's uses sorted by volume, each volume once: the last
// use of a volume named twice says whether it is read-only.
func usesOf(in []Use) []Use {
	out := make([]Use, 0, len(in))
	for _, u := range in {
		if i := slices.IndexFunc(out, func(o Use) bool { return o.Volume == u.Volume }); i >= 0 {
			out[i].ReadOnly = u.ReadOnly
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Use) int { return strings.Compare(string(a.Volume), string(b.Volume)) })
	return slices.Clip(out)
}

func sortedVols[T any](m map[VolumeID]T) []VolumeID {
	out := make([]VolumeID, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func sortedStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
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
	for v, s := range a.stages {
		st.Mounts = append(st.Mounts, Mount{Volume: v, State: s})
	}
	for k, s := range a.pubs {
		st.Mounts = append(st.Mounts, Mount{Volume: k.Volume, UID: k.UID, State: s})
	}
	slices.SortFunc(st.Mounts, func(x, y Mount) int {
		if x.Volume != y.Volume {
			return strings.Compare(string(x.Volume), string(y.Volume))
		}
		return strings.Compare(x.UID, y.UID)
	})
	return st
}
