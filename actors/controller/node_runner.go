package controller

import (
	"fmt"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// NodeHost is what a node actor's runner (NodeRunner) needs from whoever
// runs it: the Proto.Actor shell (nodeActor) or the simulation's
// deterministic scheduler. One host serves one incarnation; its methods
// are called from the incarnation's turn and return at once.
type NodeHost interface {
	// Now reads the clock.
	Now() time.Time
	// SendVolume sends msg (a protobuf message) to the volume actor of v;
	// SendAgent to this node's agent, if it is known.
	SendVolume(v cloud.VolumeID, msg any)
	SendAgent(msg any)
	// QueueFlush has the runner's Flush called in a later turn, behind
	// the messages already in the mailbox.
	QueueFlush()
	// WakeAt asks for a messages.Wake at (or soon after) at.
	WakeAt(at time.Time)
	// PutStatus writes the status, fenced by epoch (store.PutNodeStatusAt).
	PutStatus(st nodestatus.Status, epoch uint64) error
	// Fenced: a newer incarnation owns the node; this one must stop and
	// tell nobody.
	Fenced(err error)
	// Record records an event about the node.
	Record(typ string, warning bool, msg string)
	// ReadyChanged: the node became Ready or NotReady.
	ReadyChanged(ready bool)
	// Prefetch: the volume actors of vols are about to be told something.
	Prefetch(vols []cloud.VolumeID)
}

// NodeRunner is a node actor's shell without Proto.Actor: it steps the
// core and carries out its effects, a Persist by group commit
// (node_flush.go). The production actor and the simulation run this same
// code.
type NodeRunner struct {
	name cloud.NodeName
	host NodeHost
	core *nodestatus.Node
	// epoch is this incarnation's claim on the node (store.Fences): its
	// status writes land only while no newer incarnation claimed it.
	epoch uint64
	// dirty: the status changed since the last write, and a flush is on
	// its way; held: what waits for that write (node_flush.go).
	dirty bool
	held  []held
	// busy: a step or a flush is under way (a panic then drops the
	// burst: the status may be half changed).
	busy bool
	// breakEarly: BreakRunBeforeWrite.
	breakEarly bool
}

// NewNodeRunner returns the runner of one incarnation of node name.
func NewNodeRunner(name cloud.NodeName, h NodeHost, core *nodestatus.Node, epoch uint64) *NodeRunner {
	return &NodeRunner{name: name, host: h, core: core, epoch: epoch}
}

// BreakRunBeforeWrite is a TEST-ONLY hook that breaks I4 on purpose, in
// the shell: the effects that follow a Persist run at once instead of
// after the write (a detach's preparation is answered before the status
// without the volume is durable). The simulation's checker must catch it.
func (a *NodeRunner) BreakRunBeforeWrite() { a.breakEarly = true }

// Step steps the core with ev and carries out its effects.
func (a *NodeRunner) Step(ev nodestatus.Event) {
	before := a.core.Ready()
	a.busy = true // a panic now may leave the status half changed
	a.runAll(a.core.Step(a.host.Now(), ev))
	a.busy = false
	if after := a.core.Ready(); before != after {
		a.host.ReadyChanged(after)
	}
}

// PushStatus tells the agent the status now, or after the pending write.
func (a *NodeRunner) PushStatus() { a.later(held{do: a.pushStatus, push: true}) }

// Later runs do now, or after the pending write, in order with what waits
// for it.
func (a *NodeRunner) Later(do func()) { a.later(held{do: do}) }

// View is the core's status (not a copy: read only).
func (a *NodeRunner) View() nodestatus.Status { return a.core.View() }

// runEffect carries out one effect other than Persist (see runAll).
func (a *NodeRunner) runEffect(eff nodestatus.Effect) {
	h, name := a.host, string(a.name)
	switch f := eff.(type) {
	case nodestatus.PrepareAnswer:
		h.SendVolume(f.Volume, &messages.DetachPrepared{VolumeId: string(f.Volume), Node: name, Op: f.Op, Ok: f.OK, Error: f.Msg})
	case nodestatus.NotifyVolume:
		h.SendVolume(f.Volume, &messages.NodeVolumeStateChanged{
			VolumeId: string(f.Volume), Node: name, InUse: f.Info.InUse, Ready: f.Info.Ready,
			NotReadySinceUnixNano: toNanos(f.Info.NotReadySince), OutOfService: f.Info.OutOfService})
	case nodestatus.WakeAt:
		h.WakeAt(f.At)
	case nodestatus.AttachRecorded:
		h.SendVolume(f.Volume, &messages.AttachRecorded{VolumeId: string(f.Volume), Node: name})
	case nodestatus.AttachNotRecorded:
		h.SendVolume(f.Volume, &messages.AttachNotRecorded{VolumeId: string(f.Volume), Node: name})
	default:
		panic(fmt.Sprintf("controller: unknown node effect %T", eff))
	}
}

// pushStatus tells the agent the status; called when it is persisted
// (after every write, and through later).
func (a *NodeRunner) pushStatus() {
	st := a.core.View()
	msg := &messages.NodeStatusUpdated{Node: string(a.name), InUseSeq: st.InUseSeq,
		VolumesAttached: make([]*messages.AttachedVolume, 0, len(st.VolumesAttached)), VolumesInUse: make([]string, 0, len(st.VolumesInUse))}
	for _, v := range sortedKeys(st.VolumesAttached) {
		msg.VolumesAttached = append(msg.VolumesAttached, &messages.AttachedVolume{VolumeId: string(v), DevicePath: st.VolumesAttached[v]})
	}
	for _, v := range sortedKeys(st.VolumesInUse) {
		msg.VolumesInUse = append(msg.VolumesInUse, string(v))
	}
	a.host.SendAgent(msg)
}

// Handle turns one message from a volume actor, the agent or the API into
// a core event and steps it. The shell handles the rest (and what these
// messages mean to it besides) itself.
func (a *NodeRunner) Handle(msg any) {
	switch m := msg.(type) {
	case *messages.MarkVolumeAttached:
		a.Step(nodestatus.VolumeAttached{Volume: cloud.VolumeID(m.VolumeId), DevicePath: m.DevicePath})
	case *messages.MarkVolumeDetached:
		a.Step(nodestatus.VolumeDetached{Volume: cloud.VolumeID(m.VolumeId)})
	case *messages.PrepareDetach:
		a.Step(nodestatus.DetachRequested{Volume: cloud.VolumeID(m.VolumeId), Op: m.Op, Force: m.Force})
	case *messages.ReportVolumesInUse:
		vols := make([]cloud.VolumeID, len(m.VolumeIds))
		for i, v := range m.VolumeIds {
			vols[i] = cloud.VolumeID(v)
		}
		a.Step(nodestatus.InUseReported{Volumes: vols, Seq: m.Seq})
		// Answer every report, changed or not, with the status and the
		// number of the report it reflects (once it is written).
		a.PushStatus()
	case *messages.Heartbeat:
		a.Step(nodestatus.HeartbeatReceived{InstanceID: cloud.InstanceID(m.InstanceId), MaxVolumes: m.MaxVolumes})
	case *messages.AgentStarted:
		// The agent announced itself (the shell told it its workloads
		// first): the status follows, then the core knows it resynced.
		a.PushStatus()
		a.Step(nodestatus.Resynced{})
	case *messages.SetOutOfService:
		a.Step(nodestatus.OutOfServiceSet{OutOfService: m.OutOfService})
	}
}
