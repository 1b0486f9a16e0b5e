package simulation

import (
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/reconciler"
)

// agentStarted is the agent's hello: the node actor answers with the
// workloads and the status.
type agentStarted struct{}

// inUseMsg is ReportVolumesInUse (Seq is the agent's number of the
// report), with the simulation's number of the report (Num, which no core
// sees).
type inUseMsg struct {
	Seq     uint64
	Num     uint64
	Volumes []cloud.VolumeID
}

// nodeSim mimics actors/controller's node actor.
type nodeSim struct {
	w     *world
	name  cloud.NodeName
	alive bool
	inc   uint64
	core  *nodestatus.Node
	timer *timer
	// dirty and held: the shell's group commit (actors/controller's
	// node_flush.go): a Persist marks the status dirty and sends the node
	// a flushMsg; what came after it waits for that one write.
	dirty bool
	held  []heldEff
}

// flushMsg is the node's note to itself: write the dirty status.
type flushMsg struct{}

// heldEff waits for the flush: a core effect, or a push of the status.
type heldEff struct {
	eff       nodestatus.Effect
	push      bool
	dependent bool // after a Persist: dropped if the write fails
}

func (n *nodeSim) incarnation() uint64 { return n.inc }
func (n *nodeSim) isAlive() bool       { return n.alive }
func (n *nodeSim) addr() addr          { return nodeAddr(n.name) }

// start is the shell's onStarted: the persisted status, then the agent
// hears its workloads and status (it may have started first).
func (n *nodeSim) start() {
	w := n.w
	n.inc++
	n.alive, n.timer = true, &timer{}
	n.dirty, n.held = false, nil
	n.core = nodestatus.New(n.name, w.cfg.Node)
	st, found, _ := w.st.NodeStatus(n.name)
	w.tracef("%s starts (incarnation %d): found %v attached %v in use %v detaching %v", n.addr(), n.inc, found, st.VolumesAttached, st.VolumesInUse, st.VolumesDetaching)
	n.step(nodestatus.Restored{Status: st, Found: found})
	n.sendWorkloads()
	n.later()
}

func (n *nodeSim) kill() { n.alive, n.core = false, nil }

func (n *nodeSim) receive(_ addr, msg any) {
	switch m := msg.(type) {
	case wakeMsg:
		n.step(nodestatus.Tick{})
	case flushMsg:
		n.flush()
	case agentStarted:
		n.sendWorkloads()
		n.later()
	case inUseMsg:
		n.w.chk.reportApplied(n.name, m)
		n.w.heard[n.name] = max(n.w.heard[n.name], m.Num)
		n.step(nodestatus.InUseReported{Volumes: m.Volumes, Seq: m.Seq})
		// Every report, changed or not, is answered with the status and
		// the number of the report it reflects, once it is written.
		n.later()
	case *messages.MarkVolumeAttached:
		n.step(nodestatus.VolumeAttached{Volume: cloud.VolumeID(m.VolumeId), DevicePath: m.DevicePath})
	case *messages.MarkVolumeDetached:
		n.step(nodestatus.VolumeDetached{Volume: cloud.VolumeID(m.VolumeId)})
	case *messages.PrepareDetach:
		n.step(nodestatus.DetachRequested{Volume: cloud.VolumeID(m.VolumeId), Op: m.Op, Force: m.Force})
	case nodestatus.Event:
		n.step(m)
	}
}

// step steps the core and carries out the effects.
func (n *nodeSim) step(ev nodestatus.Event) {
	before := n.core.Ready()
	n.runAll(n.core.Step(n.w.now, ev))
	if after := n.core.Ready(); after != before {
		n.w.tracef("%s ready=%v", n.addr(), after)
	}
}

// runAll is the shell's runAll: from a Persist on (and while a write is
// pending) effects wait, in order, for the flush.
func (n *nodeSim) runAll(effs []nodestatus.Effect) {
	dependent := false
	for _, eff := range effs {
		if _, ok := eff.(nodestatus.Persist); ok {
			if !n.dirty {
				n.dirty = true
				n.w.send(n.addr(), n.addr(), flushMsg{})
			}
			dependent = true
			continue
		}
		if n.dirty {
			n.held = append(n.held, heldEff{eff: eff, dependent: dependent})
			continue
		}
		n.run(eff)
	}
}

// later pushes the status now, or after the pending write.
func (n *nodeSim) later() {
	if n.dirty {
		n.held = append(n.held, heldEff{push: true})
		return
	}
	n.pushStatus()
}

// flush is the shell's flush: one write of the status, then what waited
// for it; on failure, what did not depend on a Persist, then what the core
// returns for the failure.
func (n *nodeSim) flush() {
	if !n.dirty {
		return
	}
	w := n.w
	waiting := n.held
	n.dirty, n.held = false, nil
	if w.chance(w.plan.site("persist "+string(n.name)), w.cfg.Faults.PersistFail) {
		w.fault("fail the next status write of %s", n.name)
		w.st.FailNodeStatusWrites(1)
	}
	st := n.core.Status()
	if err := w.st.PutNodeStatus(st); err != nil {
		w.tracef("%s persist failed: %v", n.addr(), err)
		push := false
		for _, h := range waiting {
			switch {
			case h.dependent:
			case h.push:
				push = true
			default:
				n.run(h.eff)
			}
		}
		n.runAll(n.core.Step(w.now, nodestatus.PersistFailed{Msg: err.Error()}))
		if push {
			n.later()
		}
		return
	}
	n.core.Step(w.now, nodestatus.Persisted{})
	w.tracef("%s persisted attached %v in use %v detaching %v ready %v oos %v", n.addr(),
		st.VolumesAttached, st.VolumesInUse, st.VolumesDetaching, st.Ready, st.OutOfService)
	n.pushStatus()
	for _, h := range waiting {
		if !h.push {
			n.run(h.eff)
		}
	}
}

// run carries out one effect other than Persist.
func (n *nodeSim) run(eff nodestatus.Effect) {
	w := n.w
	switch f := eff.(type) {
	case nodestatus.PrepareAnswer:
		w.send(n.addr(), volAddr(f.Volume), &messages.DetachPrepared{VolumeId: string(f.Volume), Node: string(n.name), Op: f.Op, Ok: f.OK, Error: f.Msg})
	case nodestatus.NotifyVolume:
		var since int64
		if !f.Info.NotReadySince.IsZero() {
			since = f.Info.NotReadySince.UnixNano()
		}
		w.send(n.addr(), volAddr(f.Volume), &messages.NodeVolumeStateChanged{VolumeId: string(f.Volume), Node: string(n.name),
			InUse: f.Info.InUse, Ready: f.Info.Ready, NotReadySinceUnixNano: since, OutOfService: f.Info.OutOfService})
	case nodestatus.WakeAt:
		w.wakeAt(n.timer, n.addr(), f.At)
	case nodestatus.AttachRecorded:
		w.send(n.addr(), volAddr(f.Volume), &messages.AttachRecorded{VolumeId: string(f.Volume), Node: string(n.name)})
	case nodestatus.AttachNotRecorded:
		w.send(n.addr(), volAddr(f.Volume), &messages.AttachNotRecorded{VolumeId: string(f.Volume), Node: string(n.name)})
	}
}

// pushStatus tells the agent the status (after every write, and
// through later).
func (n *nodeSim) pushStatus() {
	st := n.core.Status()
	n.w.sendLink(n.addr(), agentAddr(n.name), n.name, reconciler.StatusChanged{Attached: st.VolumesAttached, InUse: st.VolumesInUse, InUseSeq: st.InUseSeq})
}

// sendWorkloads tells the agent its desired state from the store.
func (n *nodeSim) sendWorkloads() {
	n.w.sendLink(n.addr(), agentAddr(n.name), n.name, n.w.workloadsOf(n.name))
}

// workloadsOf is the agent's desired state as the store has it.
func (w *world) workloadsOf(n cloud.NodeName) reconciler.DesiredChanged {
	rev, _ := w.st.Revision()
	ws, _ := w.st.WorkloadsOn(n)
	out := reconciler.DesiredChanged{Workloads: []reconciler.Workload{}, Revision: rev}
	for _, wl := range ws {
		aw := reconciler.Workload{UID: wl.UID}
		for _, v := range wl.Volumes {
			aw.Volumes = append(aw.Volumes, reconciler.Use{Volume: v})
		}
		out.Workloads = append(out.Workloads, aw)
	}
	return out
}
