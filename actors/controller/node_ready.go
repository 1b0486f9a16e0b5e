package controller

import (
	"fmt"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/messages"
)

// A node is Ready only while its agent reports (nodestatus): a node that no
// agent serves, or whose agent went quiet, is NotReady, and the workloads
// placed on it are told why they wait (an event on each, once per
// NotReady spell), as Kubernetes tells a pod its node is not ready.

// notReadyMessage says why the node is NotReady.
func (a *nodeActor) notReadyMessage() string {
	if !a.heard {
		return fmt.Sprintf("node %q is NotReady: no agent has reported for it since the controller started (is a node agent running for %s?)", a.name, a.name)
	}
	return fmt.Sprintf("node %q missed heartbeats for %s: NotReady", a.name, a.env.cfg.Node.NotReadyAfter)
}

// warnWorkloads records, on every workload placed on a NotReady node that
// was not told yet, why it waits, and on the node itself that no agent
// reports, once. Not before the grace: a node's agent gets NotReadyAfter
// from the actor's start, and from the end of the controller's restore, to
// say hello before anybody is warned. A Ready
// node forgets whom it told.
func (a *nodeActor) warnWorkloads() {
	if a.core.Ready() {
		a.warned, a.told = nil, false
		return
	}
	grace := a.graceUntil
	if g := a.env.livenessFrom().Add(a.env.cfg.Node.NotReadyAfter); g.After(grace) {
		grace = g // the controller's own restore is not the agent's fault
	}
	if !a.heard && a.env.clock.Now().Before(grace) {
		return
	}
	if !a.told {
		a.told = true
		a.env.record(a.ref, "NodeNotReady", string(a.name), true, a.notReadyMessage())
	}
	ws, err := a.env.store.WorkloadsOn(a.name)
	if err != nil {
		a.env.log.WithField("node", a.name).Warnf("reading the node's workloads: %v", err)
		return
	}
	if a.warned == nil {
		a.warned = map[string]bool{}
	}
	placed := make(map[string]bool, len(ws))
	for _, w := range ws {
		key := w.UID + "/" + w.ObjectUID
		placed[key] = true
		if a.warned[key] {
			continue
		}
		a.warned[key] = true
		ref := events.Ref{Kind: events.KindWorkload, Name: w.UID, UID: w.ObjectUID}
		a.env.record(ref, "NodeNotReady", string(a.name), true, fmt.Sprintf("workload %q waits: %s", w.UID, a.notReadyMessage()))
	}
	for key := range a.warned {
		if !placed[key] {
			delete(a.warned, key)
		}
	}
}

// agentAnnounced notes the epoch of the agent incarnation that announced
// itself (0: a replay by the controller, which says nothing of the agent).
// An agent that came back in a new incarnation under this actor may be on
// a machine that rebooted or was replaced and lost its attachments: the
// node is verified at once rather than at the next periodic pass. The
// first announcement this actor hears is not a return: at a controller
// start, the start-up verification covers every node.
func (a *nodeActor) agentAnnounced(epoch uint64) {
	if epoch == 0 || epoch == a.agentEpoch {
		return
	}
	if a.agentEpoch != 0 {
		a.env.guard.Send(a.env.lookup.Sync(), &messages.SyncNodes{Nodes: []string{string(a.name)}})
	}
	a.agentEpoch = epoch
}
