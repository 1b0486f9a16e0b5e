package reconciler

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
	var buf [64]VolumeID // most agents' volumes, wanted and mounted, fit: no allocation unless changed
	if inUse := a.inUse(buf[:0]); !a.reportedOnce || !slices.Equal(inUse, a.reported) {
		a.reported, a.reportedOnce = slices.Clone(inUse), true
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
		for _, u := range a.uses {
			set[u.vol] = true
		}
		vols = sortedVols(set)
	}
	for _, v := range vols {
		_, busy := a.busy[v]
		_, stuck := a.stuck[v]
		if !busy && !stuck {
			effs = append(effs, a.next(now, v, a.usersOf(wanted, v))...)
		}
	}
	return effs
}

// inUse appends to buf, sorted and each once, the wanted volumes and every
// volume with anything mounted (even uncertainly): a volume leaves
// VolumesInUse only when fully unmounted. It runs at every step, so it
// builds no set: the caller's buffer, sorted and compacted.
func (a *Agent) inUse(buf []VolumeID) []VolumeID {
	if !a.cfg.BreakMountBeforeInUse {
		for _, u := range a.uses {
			buf = append(buf, u.vol)
		}
	}
	buf = a.mounts.appendVols(buf)
	slices.Sort(buf)
	return slices.Compact(buf)
}

// next picks the one operation volume v needs now, if any; users are the
// workloads that want it (usersOf).
func (a *Agent) next(now time.Time, v VolumeID, users []int32) []Effect {
	// Unpublish what no workload wants any more, first.
	for _, k := range a.mounts.pubsOf(v) {
		if !a.wants(users, k.UID) {
			return a.start(now, opKey{v, k.UID, OpUnpublish}, Unpublish{Volume: v, UID: k.UID})
		}
	}
	if len(users) == 0 {
		if a.mounts.stage(v) != 0 {
			return a.start(now, opKey{v, "", OpUnstage}, Unstage{Volume: v})
		}
		return nil
	}
	sv := a.seen.of(v)
	if !sv.attached || (!a.cfg.BreakMountBeforeInUse && (!sv.inUse || a.ackedSeq != a.reportSeq)) {
		return nil // I3: wait for the controller to have heard our latest report
	}
	if a.mounts.stage(v) != Mounted {
		return a.start(now, opKey{v, "", OpStage}, Stage{Volume: v, Device: sv.device})
	}
	for _, i := range users {
		u := a.uses[i]
		if uid := a.desired[u.w].uid; a.mounts.pub(PubKey{uid, v}) != Mounted {
			return a.start(now, opKey{v, uid, OpPublish}, Publish{Volume: v, UID: uid, ReadOnly: u.ro})
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
	a.busy = with(a.busy, key.vol, inflight{op: op, kind: key.kind, uid: key.uid, started: now})
	pk := PubKey{key.uid, key.vol}
	switch e := eff.(type) {
	case Stage:
		e.Op = op
		eff = e
		a.mounts.setStage(key.vol, Pending)
	case Unstage:
		e.Op = op
		eff = e
		a.mounts.setStage(key.vol, Pending)
	case Publish:
		e.Op = op
		eff = e
		a.mounts.setPub(pk, Pending)
	case Unpublish:
		e.Op = op
		eff = e
		a.mounts.setPub(pk, Pending)
	default:
		panic(fmt.Sprintf("agent: start %T", eff))
	}
	if a.cfg.OpTimeout > 0 {
		return []Effect{eff, WakeAt{At: now.Add(a.cfg.OpTimeout)}}
	}
	return []Effect{eff}
}

// timeouts records WaitForAttachTimeout once per workload whose volumes are
// not all mounted in time, naming what is missing, and asks to be woken at
// the earliest deadline still ahead (the step keeps only the earliest
// WakeAt anyway). It runs at every step and allocates only for a workload
// that times out, and for that one WakeAt.
func (a *Agent) timeouts(now time.Time) []Effect {
	var effs []Effect
	var wake time.Time
	for i := range a.desired {
		d := &a.desired[i]
		if d.timedOut || !a.anyUnmounted(d) {
			continue
		}
		deadline := d.since.Add(a.cfg.WaitForAttachAndMount)
		if now.Before(deadline) {
			if wake.IsZero() || deadline.Before(wake) {
				wake = deadline
			}
			continue
		}
		var unattached, unmounted []VolumeID
		for _, u := range a.uses[d.lo:d.hi] {
			v := u.vol
			if !a.seen.of(v).attached {
				unattached = append(unattached, v)
			}
			if a.mounts.pub(PubKey{d.uid, v}) != Mounted {
				unmounted = append(unmounted, v)
			}
		}
		d.timedOut = true
		effs = append(effs, Record{Type: EventWaitTimeout, Workload: d.uid, Warning: true,
			Message: fmt.Sprintf("unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=%v: timed out waiting for the condition", unmounted, unattached)})
	}
	if !wake.IsZero() {
		effs = append(effs, WakeAt{At: wake})
	}
	return effs
}

// anyUnmounted reports whether a volume of workload d is not mounted for it.
func (a *Agent) anyUnmounted(d *desiredWorkload) bool {
	for _, u := range a.uses[d.lo:d.hi] {
		if a.mounts.pub(PubKey{d.uid, u.vol}) != Mounted {
			return true
		}
	}
	return false
}
