package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// A node that no agent serves is NotReady from its creation, never Ready,
// and a workload placed there is told why it waits.
func TestNodeWithoutAgentIsNotReady(t *testing.T) {
	r := newRig(t)
	r.cloud.AddInstance("n4")
	must(t, r.ctl.ApplyNode(store.NodeSpec{Name: "n4"})) // no heartbeat: no agent
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n4", "v1")
	st, err := r.ctl.NodeStatus("n4", 5*time.Second)
	must(t, err)
	if st.Ready {
		t.Fatalf("node n4 without an agent shows Ready")
	}
	if st.NotReadySinceUnixNano == 0 {
		t.Fatalf("node n4 NotReady without a NotReadySince")
	}
	for _, e := range r.rec.For(events.Ref{Kind: events.KindNode, Name: "n4"}) {
		if e.Type == "NodeReady" || e.Type == "NodeNotReady" {
			t.Fatalf("node n4, its agent's grace not over, got an event: %+v", e)
		}
	}
	// Its agent had NotReadyAfter to say hello; nobody did.
	r.clk.Advance(DefaultConfig().Node.NotReadyAfter)
	r.eventually("the node says no agent reports", func() bool {
		for _, e := range r.rec.For(events.Ref{Kind: events.KindNode, Name: "n4"}) {
			if e.Type == "NodeNotReady" && strings.Contains(e.Message, "no agent has reported") {
				return true
			}
		}
		return false
	})
	r.eventually("the workload is told why it waits", func() bool {
		for _, e := range r.rec.For(events.Ref{Kind: events.KindWorkload, Name: "w1"}) {
			if e.Type == "NodeNotReady" && e.Warning && strings.Contains(e.Message, "no agent has reported") {
				return true
			}
		}
		return false
	})
	// Once its agent reports, it is Ready.
	r.ctl.Heartbeat("n4")
	r.eventually("Ready after the first heartbeat", func() bool {
		st, err := r.ctl.NodeStatus("n4", 5*time.Second)
		return err == nil && st.Ready
	})
}

// A new node whose agent says hello within its grace gets no warning.
func TestNewNodeWithAgentIsNotWarned(t *testing.T) {
	r := newRig(t)
	r.node("n1") // with its agent's hello
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.clk.Advance(DefaultConfig().Node.NotReadyAfter / 2)
	r.ctl.Heartbeat("n1")
	r.eventually("Ready", func() bool {
		st, err := r.ctl.NodeStatus("n1", 5*time.Second)
		return err == nil && st.Ready
	})
	for _, ref := range []events.Ref{{Kind: events.KindNode, Name: "n1"}, {Kind: events.KindWorkload, Name: "w1"}} {
		for _, e := range r.rec.For(ref) {
			if e.Warning {
				t.Errorf("%s/%s got a warning: %+v", ref.Kind, ref.Name, e)
			}
		}
	}
}
