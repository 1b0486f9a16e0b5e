package chaos

import (
	"math/rand/v2"
	"time"
)

// Action kinds of a fault plan.
const (
	KillVolume        = "kill-volume"
	KillNode          = "kill-node"
	KillSync          = "kill-sync"
	KillAgent         = "kill-agent"
	RestartAgent      = "restart-agent"
	RestartController = "restart-controller"
	Terminate         = "terminate-instance"
	StartInstance     = "start-instance"
	CloudErrors       = "cloud-errors"
	LatencySpike      = "latency-spike"
	Throttle          = "throttle"
	CalmCloud         = "calm-cloud"
	CreateWorkload    = "create-workload"
	MoveWorkload      = "move-workload"
	DeleteWorkload    = "delete-workload"
)

// How an actor is killed.
const (
	ByStop   = "stop"
	ByPoison = "poison"
	ByPanic  = "panic"
)

// Action is one step of a fault plan.
type Action struct {
	At     time.Duration // from the start of the run
	Kind   string
	How    string // ByStop, ByPoison, ByPanic for kills
	Volume int    // index of a volume
	Node   int    // index of a node
	Other  int    // second index (workload, destination node)
}

var weights = []struct {
	kind string
	w    int
}{
	{KillVolume, 30}, {KillNode, 8}, {KillSync, 3}, {KillAgent, 6}, {RestartAgent, 3},
	{RestartController, 1}, {Terminate, 2}, {CloudErrors, 2}, {LatencySpike, 2}, {Throttle, 2},
	{CreateWorkload, 15}, {MoveWorkload, 10}, {DeleteWorkload, 8},
}

// Plan draws the fault plan of a run from its seed alone: the same seed
// gives the same plan. Instances terminated are started again 1-3 s later;
// cloud faults last 0.5-2 s.
func Plan(seed uint64, d time.Duration, volumes, nodes int) []Action {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	total := 0
	for _, w := range weights {
		total += w.w
	}
	var plan []Action
	for at := time.Duration(0); at < d; at += time.Duration(5+r.IntN(20)) * time.Millisecond {
		n := r.IntN(total)
		kind := weights[0].kind
		for _, w := range weights {
			if n < w.w {
				kind = w.kind
				break
			}
			n -= w.w
		}
		a := Action{At: at, Kind: kind, How: []string{ByStop, ByPoison, ByPanic}[r.IntN(3)],
			Volume: r.IntN(volumes), Node: r.IntN(nodes), Other: r.IntN(1 << 16)}
		plan = append(plan, a)
		switch kind {
		case Terminate:
			plan = append(plan, Action{At: at + time.Duration(1000+r.IntN(2000))*time.Millisecond, Kind: StartInstance, Node: a.Node})
		case CloudErrors, LatencySpike, Throttle:
			plan = append(plan, Action{At: at + time.Duration(500+r.IntN(1500))*time.Millisecond, Kind: CalmCloud})
		}
	}
	sortPlan(plan)
	return plan
}

func sortPlan(p []Action) {
	for i := 1; i < len(p); i++ { // insertion sort: stable and the plan is nearly sorted
		for j := i; j > 0 && p[j].At < p[j-1].At; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}
