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
	nodeEvents := r.rec.For(events.Ref{Kind: events.KindNode, Name: "n4"})
	for _, e := range nodeEvents {
		if e.Type == "NodeReady" {
			t.Fatalf("node n4 without an agent got a NodeReady event: %+v", e)
		}
	}
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
