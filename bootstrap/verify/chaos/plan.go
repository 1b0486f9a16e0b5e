package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/tether/tether/bootstrap/process"
)

// Action kinds of a fault plan.
const (
	KillVolume        = "kill-volume"
	KillNode          = "kill-node"
	KillSync          = "kill-sync"
	KillAgent         = "kill-agent"
	RestartAgent      = "restart-agent"
	RestartController = "restart-controller"
	Terminate         = "terminate-instance" // the machine goes down, the cloud stops the instance
	ReplaceInstance   = "replace-instance"   // the machine goes down, the node gets a new instance
	DeleteInstance    = "delete-instance"    // the machine goes down, its instance is gone for good
	StartInstance     = "start-instance"     // the machine boots (a new instance if it has none)
	ConsoleDetach     = "console-detach"     // the cloud detaches a volume on its own
	CloudErrors       = "cloud-errors"
	LatencySpike      = "latency-spike"
	Throttle          = "throttle"
	ReplyLoss         = "reply-loss" // calls take effect, their replies are lost
	HangCalls         = "hang-calls" // calls hang to their deadline, take effect at its end
	StoreFailures     = "store-failures"
	CalmCloud         = "calm-cloud" // ends the cloud and store faults
	CreateWorkload    = "create-workload"
	MoveWorkload      = "move-workload"
	DeleteWorkload    = "delete-workload"
	// RestartDriver stops plugins of the CSI driver (its controller
	// plugin, one node plugin, or all of them) until the next DriverBack:
	// a driver restarting, its state kept.
	RestartDriver = "restart-driver"
	DriverBack    = "driver-back" // every plugin of the CSI driver serves again
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

// weights of the action kinds: a plan draws about 67 actions a second, so
// weight 1 is about one action every 6 s.
type weight struct {
	kind string
	w    int
}

var weights = []weight{
	{KillVolume, 120}, {KillNode, 32}, {KillSync, 12}, {KillAgent, 24}, {RestartAgent, 12},
	{RestartController, 4}, {Terminate, 1}, {ReplaceInstance, 1}, {DeleteInstance, 1}, {ConsoleDetach, 4},
	{CloudErrors, 3}, {LatencySpike, 3}, {Throttle, 3}, {ReplyLoss, 3}, {HangCalls, 3}, {StoreFailures, 3},
	{CreateWorkload, 60}, {MoveWorkload, 40}, {DeleteWorkload, 32},
}

// Plan draws the fault plan of a run from its seed alone: the same seed
// gives the same plan. Machines taken down (terminated, replaced or
// deleted instances) boot again 0.5-1.5 s later; cloud and store faults last
// 0.5-2 s.
func Plan(seed uint64, d time.Duration, volumes, nodes int) []Action {
	return plan(weights, 500*time.Millisecond, seed, d, volumes, nodes)
}

// csiWeights: the plan of a run on CSI. No machine goes down and nothing
// is detached from a console (see csi.go); the driver's plugins restart
// instead.
var csiWeights = []weight{
	{KillVolume, 120}, {KillNode, 32}, {KillSync, 12}, {KillAgent, 24}, {RestartAgent, 12},
	{RestartController, 4}, {RestartDriver, 2},
	{CloudErrors, 3}, {LatencySpike, 3}, {Throttle, 3}, {ReplyLoss, 3}, {HangCalls, 3}, {StoreFailures, 3},
	{CreateWorkload, 60}, {MoveWorkload, 40}, {DeleteWorkload, 32},
}

// planFor shapes the plan of a run: on CSI, csiWeights; a run that
// breaks a rule on purpose, so that a short run gives the break its
// chance: I3 through stale device paths needs mounted workloads on
// machines that go down and boot again before the controller finds
// their volumes gone, and little else in the way.
func planFor(cfg Config) []Action {
	if cfg.Cloud == process.CloudCSI {
		return plan(csiWeights, 0, cfg.Seed, cfg.Duration, cfg.Volumes, cfg.Nodes)
	}
	if cfg.Break == "I3-device" {
		ws := []weight{{KillVolume, 20}, {Terminate, 8}, {CreateWorkload, 60}, {MoveWorkload, 10}, {DeleteWorkload, 5}}
		return plan(ws, 0, cfg.Seed, cfg.Duration, cfg.Volumes, cfg.Nodes)
	}
	return Plan(cfg.Seed, cfg.Duration, cfg.Volumes, cfg.Nodes)
}

// plan draws a plan of actions of the given weights; machines boot boot
// plus 0-1 s after they went down.
func plan(weights []weight, boot time.Duration, seed uint64, d time.Duration, volumes, nodes int) []Action {
	return draw(embeddedShape(weights, boot), seed, d, volumes, nodes)
}

// shape is how a plan is drawn: the kinds' weights, the gap between two
// actions and the actions that follow one (a machine's boot, the end of a
// fault), all drawn from the plan's generator.
type shape struct {
	weights []weight
	gap     func(r *rand.Rand) time.Duration
	follow  func(a Action, r *rand.Rand) []Action
}

// embeddedShape: an action every 5-25 ms.
func embeddedShape(weights []weight, boot time.Duration) shape {
	return shape{
		weights: weights,
		gap:     func(r *rand.Rand) time.Duration { return time.Duration(5+r.IntN(20)) * time.Millisecond },
		follow: func(a Action, r *rand.Rand) []Action {
			switch a.Kind {
			case Terminate, ReplaceInstance, DeleteInstance:
				return []Action{{At: a.At + boot + time.Duration(r.IntN(1000))*time.Millisecond, Kind: StartInstance, Node: a.Node}}
			case CloudErrors, LatencySpike, Throttle, ReplyLoss, HangCalls, StoreFailures:
				return []Action{{At: a.At + time.Duration(500+r.IntN(1500))*time.Millisecond, Kind: CalmCloud}}
			case RestartDriver:
				return []Action{{At: a.At + time.Duration(300+r.IntN(1200))*time.Millisecond, Kind: DriverBack}}
			}
			return nil
		},
	}
}

// draw draws a plan of shape s from seed.
func draw(s shape, seed uint64, d time.Duration, volumes, nodes int) []Action {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	total := 0
	for _, w := range s.weights {
		total += w.w
	}
	var plan []Action
	for at := time.Duration(0); at < d; at += s.gap(r) {
		n := r.IntN(total)
		kind := s.weights[0].kind
		for _, w := range s.weights {
			if n < w.w {
				kind = w.kind
				break
			}
			n -= w.w
		}
		a := Action{At: at, Kind: kind, How: []string{ByStop, ByPoison, ByPanic}[r.IntN(3)],
			Volume: r.IntN(volumes), Node: r.IntN(nodes), Other: r.IntN(1 << 16)}
		plan = append(plan, a)
		plan = append(plan, s.follow(a, r)...)
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
