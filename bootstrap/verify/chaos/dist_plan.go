package chaos

import (
	"math/rand/v2"
	"time"
)

// Action kinds of a distributed plan, besides the embedded kinds that
// apply across processes (actor kills, agent restarts, machines going
// down, cloud and store faults, workload churn).
const (
	KillMember   = "kill-member"   // SIGKILL a controller member's process
	StartMember  = "start-member"  // start it again
	SigkillAgent = "sigkill-agent" // SIGKILL an agent's process, started again at once (its mounts stay)
	KillCloud    = "kill-cloud"    // SIGKILL the cloud's process
	StartCloud   = "start-cloud"   // start it again, on its state
	RestartEtcd  = "restart-etcd"  // stop etcd and start it again
	Partition    = "partition"     // cut a member off from the others' remote traffic
	Heal         = "heal"          // end it
	// MisconfiguredMember starts one more member that breaks the run's
	// remote mutual TLS (none, or another CA's certificate): the join gate
	// must keep it out, and it must exit by itself (dist_misconfig.go).
	MisconfiguredMember = "misconfigured-member"
	EndMisconfigured    = "end-misconfigured" // check it exited, stop it if not
)

// distributedWeights: a distributed plan draws about 6.7 actions a second
// (one every 50-250 ms: a process restart takes about a second, and every
// action of the runner crosses a process boundary), so weight 1 is about
// one action a minute.
var distributedWeights = []weight{
	{KillVolume, 60}, {KillNode, 20}, {KillSync, 8}, {KillAgent, 15}, {RestartAgent, 6}, {SigkillAgent, 8},
	{KillMember, 5}, {KillCloud, 5}, {RestartEtcd, 3}, {Partition, 4}, {MisconfiguredMember, 3},
	{Terminate, 2}, {ReplaceInstance, 2}, {DeleteInstance, 2}, {ConsoleDetach, 3},
	{CloudErrors, 3}, {LatencySpike, 3}, {Throttle, 3}, {ReplyLoss, 3}, {HangCalls, 3}, {StoreFailures, 3},
	{CreateWorkload, 110}, {MoveWorkload, 70}, {DeleteWorkload, 55},
}

// DistributedPlan draws the fault plan of a distributed run from its seed
// alone: the same seed gives the same plan. A member killed starts again
// 0.5-2.5 s later, the cloud 0.2-1.2 s later; a partition heals after
// 1-3 s; a misconfigured member is judged (and stopped if it still runs)
// 10-14 s after its start; machines taken down boot again 0.5-1.5 s
// later; cloud and store faults last 0.5-2 s. Which member an action names is its Other modulo
// the number of members.
func DistributedPlan(seed uint64, d time.Duration, volumes, nodes int) []Action {
	return draw(distributedShape(distributedWeights), seed, d, volumes, nodes)
}

func distributedShape(weights []weight) shape {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return shape{
		weights: weights,
		gap:     func(r *rand.Rand) time.Duration { return ms(50 + r.IntN(200)) },
		follow: func(a Action, r *rand.Rand) []Action {
			then := func(kind string, after time.Duration) []Action {
				return []Action{{At: a.At + after, Kind: kind, Node: a.Node, Other: a.Other}}
			}
			switch a.Kind {
			case KillMember:
				return then(StartMember, ms(500+r.IntN(2000)))
			case KillCloud:
				return then(StartCloud, ms(200+r.IntN(1000)))
			case Partition:
				return then(Heal, ms(1000+r.IntN(2000)))
			case MisconfiguredMember:
				return then(EndMisconfigured, ms(10000+r.IntN(4000)))
			case Terminate, ReplaceInstance, DeleteInstance:
				return then(StartInstance, ms(500+r.IntN(1000)))
			case CloudErrors, LatencySpike, Throttle, ReplyLoss, HangCalls, StoreFailures:
				return then(CalmCloud, ms(500+r.IntN(1500)))
			}
			return nil
		},
	}
}
