package simulation

import (
	"time"

	"github.com/tether/tether/actors/controller"
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

// flushMsg is the node's note to itself: write the dirty status
// (NodeHost.QueueFlush).
type flushMsg struct{}

// nodeSim is a node actor: the production runner (controller.NodeRunner)
// of its live incarnation, hosted by this scheduler (nodeHost).
type nodeSim struct {
	w     *world
	name  cloud.NodeName
	alive bool
	inc   uint64
	r     *controller.NodeRunner
	timer *timer
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
	n.r = controller.NewNodeRunner(n.name, &nodeHost{n: n, inc: n.inc}, nodestatus.New(n.name, w.cfg.Node), 0)
	if w.cfg.Break == "I4-runner" {
		n.r.BreakRunBeforeWrite()
	}
	st, found, _ := w.st.NodeStatus(n.name)
	w.tracef("%s starts (incarnation %d): found %v attached %v in use %v detaching %v", n.addr(), n.inc, found, st.VolumesAttached, st.VolumesInUse, st.VolumesDetaching)
	n.r.Step(nodestatus.Restored{Status: st, Found: found})
	n.sendWorkloads()
	n.r.PushStatus()
}

func (n *nodeSim) kill() { n.alive, n.r = false, nil }

func (n *nodeSim) receive(_ addr, msg any) {
	switch m := msg.(type) {
	case wakeMsg:
		n.r.Step(nodestatus.Tick{})
	case flushMsg:
		n.r.Flush()
	case agentStarted:
		n.sendWorkloads()
		n.r.Handle(&messages.AgentStarted{Node: string(n.name)})
	case inUseMsg:
		n.w.chk.reportApplied(n.name, m)
		n.w.heard[n.name] = max(n.w.heard[n.name], m.Num)
		rep := &messages.ReportVolumesInUse{Node: string(n.name), Seq: m.Seq}
		for _, v := range m.Volumes {
			rep.VolumeIds = append(rep.VolumeIds, string(v))
		}
		n.r.Handle(rep)
	default:
		n.r.Handle(msg)
	}
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

// nodeHost is the NodeHost of one incarnation of a node actor.
type nodeHost struct {
	n   *nodeSim
	inc uint64
}

func (h *nodeHost) live() bool { return h.n.alive && h.n.inc == h.inc }

func (h *nodeHost) Now() time.Time { return h.n.w.now }

func (h *nodeHost) SendVolume(v cloud.VolumeID, msg any) {
	if h.live() {
		h.n.w.send(h.n.addr(), volAddr(v), msg)
	}
}

// SendAgent: the status, over the link.
func (h *nodeHost) SendAgent(msg any) {
	if h.live() {
		h.n.w.sendLink(h.n.addr(), agentAddr(h.n.name), h.n.name, msg)
	}
}

func (h *nodeHost) QueueFlush() {
	if h.live() {
		h.n.w.send(h.n.addr(), h.n.addr(), flushMsg{})
	}
}

func (h *nodeHost) WakeAt(at time.Time) {
	if h.live() {
		h.n.w.wakeAt(h.n.timer, h.n.addr(), at)
	}
}

// PutStatus writes to the store, which the plan may make fail.
func (h *nodeHost) PutStatus(st nodestatus.Status, epoch uint64) error {
	w, n := h.n.w, h.n
	if w.chance(w.plan.site("persist "+string(n.name)), w.cfg.Faults.PersistFail) {
		w.fault("fail the next status write of %s", n.name)
		w.st.FailNodeStatusWrites(1)
	}
	if err := w.st.PutNodeStatusAt(st, epoch); err != nil {
		w.tracef("%s persist failed: %v", n.addr(), err)
		return err
	}
	w.tracef("%s persisted attached %v in use %v detaching %v ready %v oos %v", n.addr(),
		st.VolumesAttached, st.VolumesInUse, st.VolumesDetaching, st.Ready, st.OutOfService)
	return nil
}

// Fenced never happens: the simulation's incarnations claim no epoch.
func (h *nodeHost) Fenced(err error) { panic("simulation: fenced: " + err.Error()) }

func (h *nodeHost) Record(typ string, _ bool, msg string) {
	h.n.w.tracef("%s event %s: %s", h.n.addr(), typ, msg)
}

func (h *nodeHost) ReadyChanged(ready bool) { h.n.w.tracef("%s ready=%v", h.n.addr(), ready) }

func (h *nodeHost) Prefetch([]cloud.VolumeID) {}
