package nodestatus

import (
	"fmt"
	"slices"
	"time"

	"github.com/tether/tether/cloud"
)

// Event is an input to Step.
type Event interface{ isEvent() }

// Restored loads the persisted status (found=false: a new node, NotReady
// until its agent first reports: a node that no agent serves must not look
// healthy). The heartbeat clock starts at the restore, so a restarted
// controller gives every agent a full NotReadyAfter to report.
type Restored struct {
	Status Status
	Found  bool
}

type (
	// VolumeAttached: add to VolumesAttached.
	VolumeAttached struct {
		Volume     cloud.VolumeID
		DevicePath string
	}
	// VolumeDetached: remove from VolumesAttached.
	VolumeDetached struct{ Volume cloud.VolumeID }
	// DetachRequested: remove from VolumesAttached, persist, then answer.
	// Refused while the node reports the volume in use, unless Force.
	DetachRequested struct {
		Volume cloud.VolumeID
		Op     uint64
		Force  string
	}
	// InUseReported replaces VolumesInUse, unless Seq is older than the
	// report already applied.
	InUseReported struct {
		Volumes []cloud.VolumeID
		Seq     uint64
	}
	// HeartbeatReceived: the agent is alive. InstanceID, if set, is what
	// the agent says its machine is to the cloud (a CSI node plugin's
	// node ID), with that plugin's MaxVolumes: recorded in the status.
	HeartbeatReceived struct {
		InstanceID cloud.InstanceID
		MaxVolumes int64
	}
	// OutOfServiceSet marks or unmarks the node.
	OutOfServiceSet struct{ OutOfService bool }
	// Tick re-checks heartbeat health. No heartbeat is missed before
	// From: the moment the controller could first hear one (its start
	// finished: until then the agents may not even run); zero: the restore.
	Tick struct{ From time.Time }
	// Persisted: the last Persist succeeded.
	Persisted struct{}
	// PersistFailed: the last Persist failed; nothing it carried happened.
	PersistFailed struct{ Msg string }
)

func (Restored) isEvent()          {}
func (VolumeAttached) isEvent()    {}
func (VolumeDetached) isEvent()    {}
func (DetachRequested) isEvent()   {}
func (InUseReported) isEvent()     {}
func (HeartbeatReceived) isEvent() {}
func (OutOfServiceSet) isEvent()   {}
func (Tick) isEvent()              {}
func (Persisted) isEvent()         {}
func (PersistFailed) isEvent()     {}

// Resynced: a message between members may be lost (remote delivery is at
// most once), and a volume actor that missed a NodeVolumeStateChanged would
// wait for ever (a detach waiting for "not in use"). A resync (the agent
// said hello, or the cluster changed) tells every volume attached to or in
// use on the node what it should know again. It writes nothing.
type Resynced struct{}

func (Resynced) isEvent() {}

// Effect is an output of Step, carried out in order.
type Effect interface{ isEffect() }

type (
	// Persist: write the status. The shell writes it as it is when it
	// writes (View), which may be after more steps (a group commit).
	// Effects after it depend on it: on failure the shell drops them and
	// steps PersistFailed; on success it steps Persisted and carries them
	// out. It carries no copy of the status: the shells never wrote one,
	// and making one cost a copy of every map per changing step.
	Persist struct{}
	// PrepareAnswer answers a DetachRequested to the volume actor.
	PrepareAnswer struct {
		Volume cloud.VolumeID
		Op     uint64
		OK     bool
		Msg    string
	}
	// NotifyVolume tells a volume actor what it should know about the node.
	NotifyVolume struct {
		Volume cloud.VolumeID
		Info   VolumeInfo
	}
	// WakeAt: deliver Tick at At.
	WakeAt struct{ At time.Time }
	// AttachNotRecorded: a VolumeAttached could not be persisted; the
	// volume actor must know, or it would believe the node sees it.
	AttachNotRecorded struct{ Volume cloud.VolumeID }
	// AttachRecorded: a VolumeAttached is persisted (it comes after the
	// Persist, so it is dropped if the write fails).
	AttachRecorded struct{ Volume cloud.VolumeID }
)

func (Persist) isEffect()           {}
func (PrepareAnswer) isEffect()     {}
func (NotifyVolume) isEffect()      {}
func (WakeAt) isEffect()            {}
func (AttachNotRecorded) isEffect() {}
func (AttachRecorded) isEffect()    {}

// retryFailedWrite is how soon a NotReady transition whose write failed is
// tried again.
const retryFailedWrite = time.Second

// Step applies one event at time now.
func (n *Node) Step(now time.Time, ev Event) []Effect {
	switch e := ev.(type) {
	case Restored:
		return n.onRestored(now, e)
	case Resynced:
		return n.notifyAll(nil)
	case VolumeAttached:
		rec := AttachRecorded{Volume: e.Volume}
		if dev, ok := n.cur.VolumesAttached[e.Volume]; ok && dev == e.DevicePath && !n.cur.VolumesDetaching[e.Volume] {
			return []Effect{rec}
		}
		n.attach(e.Volume, e.DevicePath)
		n.mark(fieldDetaching, e.Volume, false)
		n.attaching = append(n.attaching, e.Volume)
		return persisted(rec)
	case VolumeDetached:
		_, listed := n.cur.VolumesAttached[e.Volume]
		if !listed && !n.cur.VolumesDetaching[e.Volume] {
			return nil
		}
		n.unattach(e.Volume)
		n.mark(fieldDetaching, e.Volume, false)
		return persisted()
	case DetachRequested:
		return n.onDetachRequested(e)
	case InUseReported:
		return n.onInUse(e)
	case HeartbeatReceived:
		n.lastHeartbeat = now
		effs := n.setReady(now, true)
		if e.InstanceID != "" && (e.InstanceID != n.cur.InstanceID || e.MaxVolumes != n.cur.MaxVolumes) {
			n.cur.InstanceID, n.cur.MaxVolumes = e.InstanceID, e.MaxVolumes
			if !slices.ContainsFunc(effs, func(f Effect) bool { _, ok := f.(Persist); return ok }) {
				effs = append(persisted(), effs...)
			}
		}
		return effs
	case OutOfServiceSet:
		if n.cur.OutOfService == e.OutOfService {
			return nil
		}
		n.cur.OutOfService = e.OutOfService
		return n.notifyAll(persisted())
	case Tick:
		return n.onTick(now, e.From)
	case Persisted:
		n.markSaved()
		n.pending, n.attaching = nil, nil
		return nil
	case PersistFailed:
		n.restoreSaved()
		var effs []Effect
		for _, p := range n.pending {
			effs = append(effs, PrepareAnswer{Volume: p.Volume, Op: p.Op, OK: false, Msg: e.Msg})
		}
		for _, v := range n.attaching {
			effs = append(effs, AttachNotRecorded{Volume: v})
		}
		n.pending, n.attaching = nil, nil
		if hb := n.lastHeartbeat.Add(n.cfg.NotReadyAfter); n.cur.Ready && !now.Before(hb) {
			// The write that made the node NotReady failed: nothing else
			// would wake it, and it would stay Ready for good. Try again.
			effs = append(effs, WakeAt{At: now.Add(retryFailedWrite)})
		}
		return effs
	}
	panic(fmt.Sprintf("nodestatus: unknown event %T", ev))
}

func (n *Node) onRestored(now time.Time, e Restored) []Effect {
	n.lastHeartbeat = now
	if !e.Found {
		n.cur.Ready, n.cur.NotReadySince = false, now
		// The wake changes nothing here (it is NotReady already); the
		// shell tells, once the agent had its NotReadyAfter to say hello.
		return persisted(WakeAt{At: now.Add(n.cfg.NotReadyAfter)})
	}
	n.cur = e.Status.Clone()
	n.cur.Name = n.saved.Name
	n.markSaved()
	return []Effect{WakeAt{At: now.Add(n.cfg.NotReadyAfter)}}
}

func (n *Node) onDetachRequested(e DetachRequested) []Effect {
	if n.cur.VolumesInUse[e.Volume] && e.Force == "" && !n.cfg.BreakIgnoreInUse {
		return []Effect{PrepareAnswer{Volume: e.Volume, Op: e.Op, Msg: fmt.Sprintf("node %q reports volume %q in use", n.cur.Name, e.Volume)}}
	}
	ans := PrepareAnswer{Volume: e.Volume, Op: e.Op, OK: true}
	if n.cfg.BreakPrepareBeforeWrite {
		return []Effect{ans}
	}
	// Written even when the volume is already out of VolumesAttached and
	// marked detaching, as the status this actor holds says: the answer
	// must rest on a write of it. In a cluster that write is fenced, so it
	// proves this activation still owns the node; a stale one that had
	// seen the volume leave could otherwise say yes while a newer one had
	// it attached again, and the volume was detached with the persisted
	// status listing it attached (I4; tether chaos --distributed, seed
	// 93001).
	n.unattach(e.Volume)
	n.mark(fieldDetaching, e.Volume, true)
	n.pending = append(n.pending, ans)
	return persisted(ans)
}

func (n *Node) onInUse(e InUseReported) []Effect {
	if e.Seq < n.cur.InUseSeq {
		return nil // a late copy of an older report
	}
	n.cur.InUseSeq = e.Seq
	n.saved.InUseSeq = max(n.saved.InUseSeq, e.Seq) // unchanged reports are not written: the number is
	// Agents report sorted lists, most of them unchanged: those cost no
	// allocation. Others are sorted first.
	report := e.Volumes
	if !strictlySorted(report) {
		report = slices.Compact(slices.Sorted(slices.Values(report)))
	}
	inUse := n.cur.VolumesInUse
	var changed []cloud.VolumeID
	for _, v := range report {
		if !inUse[v] {
			changed = append(changed, v)
		}
	}
	for v := range inUse {
		if _, listed := slices.BinarySearch(report, v); !listed {
			changed = append(changed, v)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed) // distinct: report's are, and the others are not in report
	for _, v := range changed {
		_, listed := slices.BinarySearch(report, v)
		n.mark(fieldInUse, v, listed)
	}
	effs := slices.Grow(persisted(), len(changed))
	for _, v := range changed {
		effs = append(effs, NotifyVolume{Volume: v, Info: n.cur.Info(v)})
	}
	return effs
}

func strictlySorted(vs []cloud.VolumeID) bool {
	for i := 1; i < len(vs); i++ {
		if vs[i-1] >= vs[i] {
			return false
		}
	}
	return true
}

func (n *Node) onTick(now, from time.Time) []Effect {
	base := n.lastHeartbeat
	if from.After(base) {
		base = from
	}
	deadline := base.Add(n.cfg.NotReadyAfter)
	if now.Before(deadline) {
		return []Effect{WakeAt{At: deadline}}
	}
	return n.setReady(deadline, false)
}

// setReady changes health; at is when the change took effect (for NotReady:
// the moment the last heartbeat expired).
func (n *Node) setReady(at time.Time, ready bool) []Effect {
	if n.cur.Ready == ready {
		if ready {
			return []Effect{WakeAt{At: n.lastHeartbeat.Add(n.cfg.NotReadyAfter)}}
		}
		return nil
	}
	n.cur.Ready = ready
	n.cur.NotReadySince = time.Time{}
	if !ready {
		n.cur.NotReadySince = at
	}
	effs := n.notifyAll(persisted())
	if ready {
		effs = append(effs, WakeAt{At: n.lastHeartbeat.Add(n.cfg.NotReadyAfter)})
	}
	return effs
}

// notifyAll appends to effs a notification of every volume attached to
// or in use on the node.
func (n *Node) notifyAll(effs []Effect) []Effect {
	all := make([]cloud.VolumeID, 0, len(n.cur.VolumesInUse)+len(n.cur.VolumesAttached))
	for v := range n.cur.VolumesInUse {
		all = append(all, v)
	}
	for v := range n.cur.VolumesAttached {
		all = append(all, v)
	}
	slices.Sort(all)
	effs = slices.Grow(effs, len(all))
	for _, v := range slices.Compact(all) {
		effs = append(effs, NotifyVolume{Volume: v, Info: n.cur.Info(v)})
	}
	return effs
}

// persisted returns a Persist, then effs (which depend on it).
func persisted(effs ...Effect) []Effect {
	out := make([]Effect, 1, 1+len(effs))
	out[0] = Persist{}
	return append(out, effs...)
}
