package agent

import (
	"fmt"
	"slices"
	"time"
)

// reconcile reports VolumesInUse, then starts at most one operation per
// volume. Nothing happens before the disk scan, the desired state and the
// node status are all known.
func (a *Agent) reconcile(now time.Time) []Effect {
	if !a.restored || !a.desiredKnown {
		return nil
	}
	wanted := a.wantedBy()
	var effs []Effect
	if inUse := a.inUse(wanted); !a.reportedOnce || !slices.Equal(inUse, a.reported) {
		a.reported, a.reportedOnce = inUse, true
		a.reportSeq++
		effs = append(effs, ReportInUse{Volumes: slices.Clone(inUse), Seq: a.reportSeq})
	}
	effs = append(effs, a.timeouts(now)...)
	if !a.statusKnown {
		return effs
	}
	vols := a.reported
	if a.cfg.BreakMountBeforeInUse {
		// The broken agent acts on what it wants, reported or not.
		set := map[VolumeID]bool{}
		for _, v := range a.reported {
			set[v] = true
		}
		for v := range wanted {
			set[v] = true
		}
		vols = sortedVols(set)
	}
	for _, v := range vols {
		_, busy := a.busy[v]
		_, stuck := a.stuck[v]
		if !busy && !stuck {
			effs = append(effs, a.next(now, v, wanted[v])...)
		}
	}
	return effs
}

// wantedBy maps each wanted volume to its workloads (uid -> read-only).
// It is kept until the desired state changes (it was built again on every
// step: a fifth of a fleet start's garbage); callers only read it.
func (a *Agent) wantedBy() map[VolumeID]map[string]bool {
	if a.wanted != nil {
		return a.wanted
	}
	out := map[VolumeID]map[string]bool{}
	for uid, d := range a.desired {
		for _, u := range d.uses {
			if out[u.Volume] == nil {
				out[u.Volume] = map[string]bool{}
			}
			out[u.Volume][uid] = u.ReadOnly
		}
	}
	a.wanted = out
	return out
}

// inUse: wanted volumes and every volume with anything mounted (even
// uncertainly): it leaves VolumesInUse only when fully unmounted.
func (a *Agent) inUse(wanted map[VolumeID]map[string]bool) []VolumeID {
	set := map[VolumeID]bool{}
	for v := range wanted {
		if !a.cfg.BreakMountBeforeInUse {
			set[v] = true
		}
	}
	for v := range a.stages {
		set[v] = true
	}
	for k := range a.pubs {
		set[k.Volume] = true
	}
	return sortedVols(set)
}

// next picks the one operation volume v needs now, if any.
func (a *Agent) next(now time.Time, v VolumeID, users map[string]bool) []Effect {
	// Unpublish what no workload wants any more, first.
	for _, k := range a.pubKeys(v) {
		if _, ok := users[k.UID]; !ok {
			return a.start(now, opKey{v, k.UID, OpUnpublish}, Unpublish{Volume: v, UID: k.UID})
		}
	}
	if len(users) == 0 {
		if _, staged := a.stages[v]; staged {
			return a.start(now, opKey{v, "", OpUnstage}, Unstage{Volume: v})
		}
		return nil
	}
	dev, attached := a.attached[v]
	if !attached || (!a.cfg.BreakMountBeforeInUse && (!a.inUseAcked[v] || a.ackedSeq != a.reportSeq)) {
		return nil // I3: wait for the controller to have heard our latest report
	}
	if a.stages[v] != Mounted {
		return a.start(now, opKey{v, "", OpStage}, Stage{Volume: v, Device: dev})
	}
	for _, uid := range sortedStrings(boolKeys(users)) {
		if a.pubs[PubKey{uid, v}] != Mounted {
			return a.start(now, opKey{v, uid, OpPublish}, Publish{Volume: v, UID: uid, ReadOnly: users[uid]})
		}
	}
	return nil
}

// start begins an operation unless its backoff holds it back; with an
// OpTimeout it asks to be woken at the operation's deadline.
func (a *Agent) start(now time.Time, key opKey, eff Effect) []Effect {
	if b := a.backoffs[key]; b != nil && !b.Ready(now) {
		return []Effect{WakeAt{At: b.RetryAt()}}
	}
	a.nextOp++
	op := a.nextOp
	a.busy[key.vol] = inflight{op: op, kind: key.kind, uid: key.uid, started: now}
	pk := PubKey{key.uid, key.vol}
	switch e := eff.(type) {
	case Stage:
		e.Op = op
		eff, a.stages[key.vol] = e, Pending
	case Unstage:
		e.Op = op
		eff, a.stages[key.vol] = e, Pending
	case Publish:
		e.Op = op
		eff, a.pubs[pk] = e, Pending
	case Unpublish:
		e.Op = op
		eff, a.pubs[pk] = e, Pending
	default:
		panic(fmt.Sprintf("agent: start %T", eff))
	}
	if a.cfg.OpTimeout > 0 {
		return []Effect{eff, WakeAt{At: now.Add(a.cfg.OpTimeout)}}
	}
	return []Effect{eff}
}

// timeouts records WaitForAttachTimeout once per workload whose volumes are
// not all mounted in time, naming what is missing.
func (a *Agent) timeouts(now time.Time) []Effect {
	var effs []Effect
	for _, uid := range sortedStrings(boolKeys(a.desired)) {
		d := a.desired[uid]
		var unattached, unmounted []VolumeID
		for _, u := range d.uses {
			v := u.Volume
			if _, ok := a.attached[v]; !ok {
				unattached = append(unattached, v)
			}
			if a.pubs[PubKey{uid, v}] != Mounted {
				unmounted = append(unmounted, v)
			}
		}
		deadline := d.since.Add(a.cfg.WaitForAttachAndMount)
		switch {
		case len(unmounted) == 0 || d.timedOut:
		case now.Before(deadline):
			effs = append(effs, WakeAt{At: deadline})
		default:
			d.timedOut = true
			effs = append(effs, Record{Type: EventWaitTimeout, Workload: uid, Warning: true,
				Message: fmt.Sprintf("unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=%v: timed out waiting for the condition", unmounted, unattached)})
		}
	}
	return effs
}

func (a *Agent) pubKeys(v VolumeID) []PubKey {
	var out []PubKey
	for k := range a.pubs {
		if k.Volume == v {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(x, y PubKey) int {
		if x.UID < y.UID {
			return -1
		}
		if x.UID > y.UID {
			return 1
		}
		return 0
	})
	return out
}

func boolKeys[K comparable, V any](m map[K]V) map[K]bool {
	out := make(map[K]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
