package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// nodeActor owns one node's status. Every change is persisted to the store
// before anybody hears of it (see nodestatus).
type nodeActor struct {
	// NodeRunner is this incarnation's shell logic (node_runner.go): the
	// core, its group commit. Reset at every start.
	NodeRunner
	env   *env
	name  cloud.NodeName
	ref   events.Ref
	self  *actor.PID
	timer timer
	// heard: a heartbeat came since this actor started; warned: the
	// workloads told that the node is NotReady; told: the node's own
	// NotReady event recorded; graceUntil: until then a silent agent is
	// not worth an event (node_ready.go).
	heard      bool
	warned     map[string]bool
	told       bool
	graceUntil time.Time
	// agentTold: this incarnation sent its state to the agent address it
	// knows (distributed mode, cluster.go).
	agentTold bool
	// agentEpoch: the epoch of the agent incarnation last heard announce
	// itself (0: none yet). Another one means the agent came back.
	agentEpoch uint64
	// firstTold: the agent's desired state this first incarnation took
	// from Start's bulk read; sent again, instead of read again, when the
	// agent (started after this actor, as in one process) announces
	// itself, if no change was applied since (restore_handoff.go).
	firstTold *messages.NodeWorkloads
	// registering: this incarnation checked, or is checking, that the
	// desired state has the node its agent announces (register.go).
	registering bool
}

// named gives the actor its identity, from its name (see the shared Props
// of New); Started is every incarnation's first message.
func (a *nodeActor) named(ctx actor.Context) {
	a.name = cloud.NodeName(strings.TrimPrefix(a.env.identity(ctx), nodePrefix))
	a.ref = events.Ref{Kind: events.KindNode, Name: string(a.name)}
}

func (a *nodeActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.named(ctx)
		a.onStarted(ctx)
	case *actor.Restarting, *actor.Stopping:
		a.timer.stop()
		if a.dirty && !a.busy {
			// A panic outside a step (a crash asked for, a send that
			// failed) or a stop between messages: the status is whole, and
			// the burst's answers would otherwise be lost with it (each a
			// volume waiting PrepareTimeout). Write it as the flush would.
			a.Flush()
		}
		a.dirty, a.held = false, nil // what is left: as if the process had died
	case *actor.Stopped:
		a.env.lookup.stopped(nodePrefix + string(a.name))
	case *messages.Crash:
		panic("node " + string(a.name) + ": crash requested: " + m.Reason)
	case flushStatus:
		a.Flush()
	case registerFailed:
		a.registering = false // the next heartbeat tries again
	case *messages.GetNodeStatus:
		// What is durable: answered after the pending write, if any.
		if sender := ctx.Sender(); sender != nil {
			a.Later(func() { ctx.Send(sender, a.status()) })
		}
	case *messages.MarkVolumeAttached, *messages.MarkVolumeDetached, *messages.PrepareDetach:
		a.Handle(m)
	case *messages.ReportVolumesInUse:
		a.heardFromAgent(ctx)
		a.Handle(m)
	case *messages.Heartbeat:
		if ctx.Sender() != nil {
			a.register(m.Node) // an agent's, not the controller's own hello
		}
		a.heardFromAgent(ctx)
		a.heard = true
		a.Handle(m)
	case *messages.AgentStarted:
		if a.env.cluster != nil && ctx.Sender() != nil {
			a.env.agents.learn(a.name, ctx.Sender())
		}
		a.agentTold = true
		a.agentAnnounced(m.AgentEpoch)
		if !a.resendFirst() {
			a.sendWorkloads(ctx)
		}
		a.Handle(m)
	case *messages.GetAgentStatus:
		// Distributed mode: the controller asks through the node actor,
		// which knows where the agent listens.
		if pid := a.env.agentFor(a.name); pid != nil {
			ctx.Forward(pid)
		}
	case *messages.SetOutOfService:
		a.Handle(m)
	case *messages.Wake:
		a.refreshUID() // ApplyAll wakes the actor of every node it puts
		a.timer.fired(a.env.clock.Now())
		a.Step(nodestatus.Tick{From: a.env.livenessFrom()})
		a.warnWorkloads() // ApplyAll wakes the node of every workload it puts
	}
}

func (a *nodeActor) onStarted(ctx actor.Context) {
	a.self = ctx.Self()
	a.refreshUID()
	epoch, err := a.env.store.Claim(store.NodeOwner(a.name))
	if err != nil {
		panic(fmt.Sprintf("node %s: claiming the node: %v", a.name, err))
	}
	a.NodeRunner = NodeRunner{name: a.name, host: nodeShell{a}, core: nodestatus.New(a.name, a.env.cfg.Node), epoch: epoch}
	st, found, err := a.env.store.NodeStatus(a.name)
	if err != nil {
		panic(fmt.Sprintf("node %s: rebuild from store: %v", a.name, err))
	}
	a.graceUntil = a.env.clock.Now().Add(a.env.cfg.Node.NotReadyAfter)
	a.Step(nodestatus.Restored{Status: st, Found: found})
	// An agent that started before this actor is waiting for its state:
	// Start's bulk read of it for a first incarnation (restore_handoff.go),
	// else the store's now.
	if msg, ok := a.env.restore.agents.take(a.name); ok {
		a.firstTold = msg
		a.tellAgent(msg)
	} else {
		a.sendWorkloads(ctx)
	}
	a.PushStatus()
}

func (a *nodeActor) status() *messages.NodeStatus {
	st := a.core.View()
	out := &messages.NodeStatus{Node: string(a.name), Ready: st.Ready, NotReadySinceUnixNano: toNanos(st.NotReadySince),
		OutOfService: st.OutOfService, LastHeartbeatUnixNano: toNanos(a.core.LastHeartbeat()), ObjectUid: a.ref.UID,
		VolumesAttached: make([]*messages.AttachedVolume, 0, len(st.VolumesAttached)), VolumesInUse: make([]string, 0, len(st.VolumesInUse))}
	for _, v := range sortedKeys(st.VolumesAttached) {
		out.VolumesAttached = append(out.VolumesAttached, &messages.AttachedVolume{VolumeId: string(v), DevicePath: st.VolumesAttached[v]})
	}
	for _, v := range sortedKeys(st.VolumesInUse) {
		out.VolumesInUse = append(out.VolumesInUse, string(v))
	}
	return out
}

// sendWorkloads tells the agent its desired state from the store.
func (a *nodeActor) sendWorkloads(ctx actor.Context) {
	msg, err := nodeWorkloads(a.env, a.name)
	if err != nil {
		a.env.log.WithField("node", a.name).Errorf("reading workloads for the agent: %v", err)
		return
	}
	a.tellAgent(msg)
}

// tellAgent sends the agent its desired state.
func (a *nodeActor) tellAgent(msg *messages.NodeWorkloads) {
	if pid := a.env.agentFor(a.name); pid != nil {
		a.env.guard.Send(pid, msg)
	}
}

// resendFirst sends the agent the state this incarnation took from Start's
// bulk read, once, if it is still current: the store's revision has not
// moved since (every change of the desired state moves it, and the
// agent's state depends on nothing else). A restart of a process starts
// the agents after the controller: each announces itself, and without
// this each node actor would read the store for what it already holds.
func (a *nodeActor) resendFirst() bool {
	msg := a.firstTold
	a.firstTold = nil
	if msg == nil {
		return false
	}
	rev, err := a.env.store.Revision()
	if err != nil || rev != msg.Revision {
		return false
	}
	a.tellAgent(msg)
	return true
}

// nodeWorkloads builds a node agent's desired state from the store. A
// workload gets a volume read-only when it asks so, and always when the
// volume is ReadOnlyMany: as Kubernetes publishes a ReadOnlyMany volume
// read-only to every pod (its provisioner marks such a volume read-only,
// and a pod's readOnly can only add to that), never refusing the pod.
func nodeWorkloads(e *env, node cloud.NodeName) (*messages.NodeWorkloads, error) {
	rev, err := e.store.Revision()
	if err != nil {
		return nil, err
	}
	ws, err := e.store.WorkloadsOn(node)
	if err != nil {
		return nil, err
	}
	spec, _, err := e.store.Node(node)
	if err != nil {
		return nil, err
	}
	rox, err := readOnlyMany(e.store, ws)
	if err != nil {
		return nil, err
	}
	return workloadsMessage(node, rev, spec, ws, rox), nil
}

// workloadsMessage is a node agent's desired state: the workloads ws on
// node (by Seq), rox the ReadOnlyMany volumes among theirs.
func workloadsMessage(node cloud.NodeName, rev uint64, spec store.NodeSpec, ws []store.Workload, rox map[cloud.VolumeID]bool) *messages.NodeWorkloads {
	msg := &messages.NodeWorkloads{Node: string(node), Revision: rev, NodeObjectUid: spec.ObjectUID}
	for _, w := range ws {
		spec := &messages.WorkloadSpec{Uid: w.UID, ObjectUid: w.ObjectUID}
		for _, v := range w.Volumes {
			ro := rox[v] || slices.Contains(w.ReadOnly, v)
			spec.Volumes = append(spec.Volumes, &messages.VolumeUse{VolumeId: string(v), ReadOnly: ro})
		}
		msg.Workloads = append(msg.Workloads, spec)
	}
	return msg
}

// readOnlyMany returns which of the volumes that workloads ws use
// without asking for read-only are ReadOnlyMany, in one read. Never
// all volumes at once: this runs for every node on every change told to
// its agent, and a read of the whole fleet per node made a fleet's
// applies quadratic. A volume's mode is fixed when it is created, and a
// volume that workloads use cannot be deleted, so what it reads holds for
// the workloads read before it.
func readOnlyMany(st store.Store, ws []store.Workload) (map[cloud.VolumeID]bool, error) {
	var ask orderedSet[cloud.VolumeID]
	for _, w := range ws {
		for _, v := range w.Volumes {
			if !slices.Contains(w.ReadOnly, v) {
				ask.add(v)
			}
		}
	}
	vols, err := st.VolumesOf(ask.list)
	if err != nil {
		return nil, err
	}
	rox := map[cloud.VolumeID]bool{}
	for id, v := range vols {
		if v.Mode == cloud.MultiNode && v.ReadOnly {
			rox[id] = true
		}
	}
	return rox, nil
}
