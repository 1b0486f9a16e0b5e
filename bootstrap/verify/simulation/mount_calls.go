package simulation

import (
	"fmt"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/reconciler"
)

// mountCalls is the agent's Calls on this scheduler. A call starts
// when the runner decides it (the I3 check of the agent's side runs then,
// against the status the agent held: seen). It runs (its effect on the
// disk, then its return) after a short delay; or slowly, up to the
// agent's OpTimeout; or it hangs: it returns only after the core's
// OpTimeout has failed its operation, up to half a minute later, and not
// at all if the machine goes down first (the calls die with it).
func (a *agentSim) mountCalls() *agent.Calls {
	var calls *agent.Calls
	calls = agent.NewCallsOn(func(vol cloud.VolumeID, r reconciler.Running, run func()) {
		w := a.w
		kind := opKindOf(r.Kind)
		if kind == opStage || kind == opPublish {
			held := a.seen
			w.tracef("%s decides %s of %s (op %d) holding attached %v in use %v (seq %d)", a.addr(), kind, vol, r.Op, held.Attached, held.InUse, held.InUseSeq)
			w.chk.decided(a, vol, kind, held)
		}
		s := w.plan.site("ops " + string(a.node))
		delay := s.uniform(5*time.Millisecond, 300*time.Millisecond)
		// Slow and hung calls draw from a site of their own, so that the
		// draws of s stay as they were before they existed.
		hs := w.plan.site("mount hang " + string(a.node))
		slow, hang := w.chance(hs, w.cfg.Faults.SlowMount), w.chance(hs, w.cfg.Faults.HangMount)
		timeout := max(w.cfg.Agent.OpTimeout, time.Second)
		slowFor, hangFor := hs.uniform(time.Second, timeout), hs.uniform(timeout, timeout+30*time.Second)
		switch {
		case hang:
			w.fault("hang the %s of %s on %s for %s", kind, vol, a.node, hangFor)
			delay = hangFor
		case slow:
			w.fault("slow %s of %s on %s: %s", kind, vol, a.node, slowFor)
			delay = slowFor
		}
		w.after(delay, func() {
			if a.calls != calls {
				w.tracef("%s: %s of %s died with its machine", a.addr(), kind, vol)
				return
			}
			run()
		})
	})
	return calls
}

func opKindOf(k reconciler.OpKind) opKind {
	switch k {
	case reconciler.OpStage:
		return opStage
	case reconciler.OpUnstage:
		return opUnstage
	case reconciler.OpPublish:
		return opPublish
	case reconciler.OpUnpublish:
		return opUnpublish
	}
	panic(fmt.Sprintf("simulation: unknown mount call %v", k))
}

// statusMsg is the node actor's NodeStatusUpdated.
func statusMsg(n cloud.NodeName, s reconciler.StatusChanged) *messages.NodeStatusUpdated {
	m := &messages.NodeStatusUpdated{Node: string(n), InUseSeq: s.InUseSeq}
	for _, v := range sortedKeys(s.Attached) {
		m.VolumesAttached = append(m.VolumesAttached, &messages.AttachedVolume{VolumeId: string(v), DevicePath: s.Attached[v]})
	}
	for _, v := range sortedKeys(s.InUse) {
		if s.InUse[v] {
			m.VolumesInUse = append(m.VolumesInUse, string(v))
		}
	}
	return m
}

// workloadsMsg is the node actor's NodeWorkloads.
func workloadsMsg(n cloud.NodeName, d reconciler.DesiredChanged) *messages.NodeWorkloads {
	m := &messages.NodeWorkloads{Node: string(n), Revision: d.Revision}
	for _, wl := range d.Workloads {
		spec := &messages.WorkloadSpec{Uid: wl.UID}
		for _, u := range wl.Volumes {
			spec.Volumes = append(spec.Volumes, &messages.VolumeUse{VolumeId: string(u.Volume), ReadOnly: u.ReadOnly})
		}
		m.Workloads = append(m.Workloads, spec)
	}
	return m
}

// statusOf is the status as the agent's shell reads NodeStatusUpdated.
func statusOf(m *messages.NodeStatusUpdated) reconciler.StatusChanged {
	s := reconciler.StatusChanged{Attached: map[cloud.VolumeID]string{}, InUse: map[cloud.VolumeID]bool{}, InUseSeq: m.InUseSeq}
	for _, v := range m.VolumesAttached {
		s.Attached[cloud.VolumeID(v.VolumeId)] = v.DevicePath
	}
	for _, v := range m.VolumesInUse {
		s.InUse[cloud.VolumeID(v)] = true
	}
	return s
}
