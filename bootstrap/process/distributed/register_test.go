package distributed_test

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// Agents register their nodes, as the kubelet does: with no Node
// document applied, each agent's node appears (with an instance), and a
// workload scheduled on it reaches its mount.
func TestFleetAgentsRegisterTheirNodes(t *testing.T) {
	r := startRig(t, 2, 2)
	r.eventually("both nodes registered by their agents", 60*time.Second, func() bool {
		got := map[string]bool{}
		for _, n := range r.nodeStatuses() {
			if n.GetInstanceId() != "" && n.GetStatus().GetReady() {
				got[n.GetSpec().GetName()] = true
			}
		}
		return got["n1"] && got["n2"]
	})
	r.place(map[string]cloud.NodeName{"w-1": "n1", "w-2": "n2"})
	r.converge("workloads on registered nodes", 60*time.Second)
}
