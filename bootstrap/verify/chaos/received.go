package chaos

import (
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/reconciler"
)

// WireAgents makes the agents of ac record into c what they were told and
// when they acted, so that I3 is judged against the node status an agent
// had RECEIVED when it started a stage or publish, not only against the
// durable one (which the agent may not have seen yet, or may have seen
// replaced): a middleware on the agent's mailbox records every node
// status delivered, as its Receive starts on it, and every start of an
// incarnation (which holds no status yet); the agent's OnCall records
// each mount call as the agent starts it, in that same Receive. Both run
// on the agent's mailbox, so their stamps order them exactly: the status
// a call was decided on is the last one delivered before it, whatever
// the agent's core made of it.
func (c *Checker) WireAgents(ac *agent.Config) {
	ac.Middleware = append(slices.Clip(ac.Middleware), c.delivered)
	ac.OnCall = c.onCall
}

// delivered records what the agent's Receive is handed, before it runs.
func (c *Checker) delivered(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(ctx actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch m := env.Message.(type) {
		case *actor.Started:
			c.add(record{kind: recAgentStart, node: agentNode(ctx.Self())})
		case *messages.NodeStatusUpdated:
			c.add(record{kind: recDelivered, node: agentNode(ctx.Self()), status: receivedStatus(m)})
		}
		next(ctx, env)
	}
}

// agentNode is the node of the agent at pid (agent.AgentName).
func agentNode(pid *actor.PID) cloud.NodeName {
	id := pid.GetId()
	if i := strings.LastIndex(id, agent.AgentName("")); i >= 0 {
		id = id[i+len(agent.AgentName("")):]
	}
	return cloud.NodeName(id)
}

func receivedStatus(m *messages.NodeStatusUpdated) statusRec {
	st := statusRec{attached: map[cloud.VolumeID]string{}, inUse: map[cloud.VolumeID]bool{}}
	for _, a := range m.VolumesAttached {
		st.attached[cloud.VolumeID(a.VolumeId)] = a.DevicePath
	}
	for _, v := range m.VolumesInUse {
		st.inUse[cloud.VolumeID(v)] = true
	}
	return st
}

// onCall records a stage or publish as the agent starts it.
func (c *Checker) onCall(n cloud.NodeName, vol cloud.VolumeID, r reconciler.Running) {
	if r.Kind == reconciler.OpStage || r.Kind == reconciler.OpPublish {
		c.add(record{kind: recCall, node: n, vol: vol, op: r.Kind.String()})
	}
}

// held is the node status an agent holds: nil before its first.
type held = *statusRec

// onDelivered: the agent of r.node holds r.status from now on; the
// histories tell what it changed for each volume.
func (j *judge) onDelivered(r record) {
	old, st := j.held[r.node], r.status
	vols := union(st.attached, old.attachedOrNil())
	for v := range st.inUse {
		vols[v] = true
	}
	if old != nil {
		for v := range old.inUse {
			vols[v] = true
		}
	}
	for v := range vols {
		_, was := old.listed(v)
		_, is := st.listed(v)
		if old == nil || was != is || old.inUse[v] != st.inUse[v] {
			j.note(r, v, "agent %s received status attached=%v in-use=%v", r.node, is, st.inUse[v])
		}
	}
	j.held[r.node] = &st
}

// onAgentStart: a new incarnation holds no status.
func (j *judge) onAgentStart(r record) {
	delete(j.held, r.node)
}

// onCall: the call on r.vol is decided on what the agent holds now.
func (j *judge) onCall(r record) {
	h := j.held[r.node]
	_, listed := h.listed(r.vol)
	j.note(r, r.vol, "agent %s starts %s, holding attached=%v in-use=%v", r.node, r.op, listed, h != nil && h.inUse[r.vol])
	j.decided[volNode{r.vol, r.node}] = decision{held: h}
}

// decision is the status an agent held when it started a call.
type decision struct{ held held }

// judgeReceived judges a stage or publish starting against the status its
// agent had received when it started the call (I3: the controller
// reported the volume attached to the node, and in use there). A mount
// without a recorded call (an agent not wired by WireAgents) is not
// judged so.
func (j *judge) judgeReceived(r record) {
	key := volNode{r.vol, r.node}
	d, ok := j.decided[key]
	if !ok {
		return
	}
	delete(j.decided, key)
	j.decisions++
	_, listed := d.held.listed(r.vol)
	if inUse := d.held != nil && d.held.inUse[r.vol]; !listed || !inUse {
		j.violate(r, "I3", r.vol, r.node, "%s while the status the agent had received when it started the call lists it attached=%v in-use=%v (received any: %v)",
			r.op, listed, inUse, d.held != nil)
	}
}

func (s *statusRec) attachedOrNil() map[cloud.VolumeID]string {
	if s == nil {
		return nil
	}
	return s.attached
}

// listed returns the device s lists vol attached at; s may be nil.
func (s *statusRec) listed(vol cloud.VolumeID) (string, bool) {
	if s == nil {
		return "", false
	}
	dev, ok := s.attached[vol]
	return dev, ok
}
