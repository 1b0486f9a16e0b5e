package simulation

import (
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/node/reconciler"
)

// Config describes one simulated cluster and its faults. Start from
// DefaultConfig.
type Config struct {
	Nodes   int // nodes n1..nN, each with an instance, an agent and a node actor
	Volumes int // volumes v1..vN
	// MultiNode is how many of the volumes (the last ones) are multi-node;
	// the others are exclusive.
	MultiNode int
	// Workloads created before the cores start.
	InitialWorkloads int

	// Churn is the length of the faulty phase; Calm is how long after it
	// I5 must hold (zero: CalmDeadline()).
	Churn time.Duration
	Calm  time.Duration

	SyncPeriod     time.Duration
	CloudTimeout   time.Duration
	HeartbeatEvery time.Duration
	// BatchSize of the sim cloud's bulk queries.
	BatchSize int
	Volume    volume.Config
	Node      nodestatus.Config
	Agent     reconciler.Config

	Faults Faults

	// MaxSteps bounds a run (a livelock is reported as a violation).
	MaxSteps int
	// ShrinkRuns bounds the re-runs spent minimising a violating plan (0:
	// no shrinking).
	ShrinkRuns int
	// Trace keeps the full trace of every run (otherwise it is recorded
	// only when a run violates an invariant, by running it again).
	Trace bool

	// StrictCloud makes the sim cloud refuse a second exclusive attach. By
	// default it is permissive (accepts and records it), so that I1 rests
	// on tether's decisions alone.
	StrictCloud bool

	// Break is a test-only switch that breaks one safety rule on purpose,
	// through the cores' test hooks, so that a test can prove the matching
	// checker catches it: "I1" (volume.Config.BreakMultiAttach), "I2"
	// (volume and nodestatus BreakIgnoreInUse), "I2-wiring" (BreakI2),
	// "I3" (reconciler.Config.BreakMountBeforeInUse), "I4"
	// (nodestatus.Config.BreakPrepareBeforeWrite), "I5"
	// (volume.Config.BreakNeverDetach). Four more break the shells:
	// "I3-wiring" (the agent's core is told that the controller heard
	// every report and lists every attached volume in use), "I3-stale"
	// (agent.RunnerConfig.BreakStaleStatus: the production runner acts on
	// a stale status, a cache that never forgets a volume once listed),
	// "I3-device" (a stage mounts whatever its device path names,
	// attached or not, as a shell that trusted paths did) and "I4-runner"
	// (controller.NodeRunner.BreakRunBeforeWrite: the production node
	// runner answers before its group commit's write). "": nothing broken.
	Break string

	// BreakI2 is a test-only hook that breaks the shells, not the cores:
	// the volume runners (controller.VolumeRunnerConfig.BreakI2) tell
	// their cores that no node uses them and ask every detach's
	// preparation as forced. The checker must then report I2.
	BreakI2 bool
}

// withBreak returns c with the test hooks of c.Break set.
func (c Config) withBreak() Config {
	switch c.Break {
	case "":
	case "I1":
		c.Volume.BreakMultiAttach = true
	case "I2":
		c.Volume.BreakIgnoreInUse = true
		c.Node.BreakIgnoreInUse = true
	case "I2-wiring":
		c.BreakI2 = true
	case "I3-wiring", "I3-stale", "I3-device", "I4-runner":
	case "I3":
		c.Agent.BreakMountBeforeInUse = true
	case "I4":
		c.Node.BreakPrepareBeforeWrite = true
	case "I5":
		c.Volume.BreakNeverDetach = true
	default:
		panic("simulation: unknown Config.Break " + c.Break)
	}
	return c
}

// Faults are the probabilities and rates of the injected faults. Zero
// disables a fault.
type Faults struct {
	// WorkloadEvery is the mean interval between workload changes.
	WorkloadEvery time.Duration
	// FaultEvery is the mean interval between kills, instance
	// terminations, partitions and out-of-service marks.
	FaultEvery time.Duration

	CloudError   float64 // a cloud call fails before any effect
	LostResponse float64 // a cloud call's response is lost: a timeout error
	HangCall     float64 // an attach or detach hangs: its effect lands at the very end of CloudTimeout, its reply is lost
	DupResult    float64 // a cloud call's result is delivered twice
	PersistFail  float64 // a node status write fails
	MountFail    float64 // a mount operation fails
	SlowMount    float64 // a mount call returns late, within the agent's OpTimeout
	HangMount    float64 // a mount call hangs past the agent's OpTimeout (its machine's end ends it)
	LinkDrop     float64 // an agent <-> node actor message is dropped
	LinkDup      float64 // ... delivered twice
	LinkDelay    float64 // ... delayed by seconds (reordered)

	// Kinds of FaultEvery events, as relative weights: an actor killed; an
	// instance terminated (started again minutes later), rebooted
	// (started again within a sync period), replaced (a new instance for
	// its node), deleted for good; a node partitioned, marked out of
	// service; a volume detached from the cloud console; a node deleted
	// from the desired state with its workloads; every controller core
	// killed at once (a controller restart).
	KillWeight, TerminateWeight, RebootWeight, ReplaceWeight, DeleteWeight int
	PartitionWeight, OutOfServiceWeight, ConsoleDetachWeight               int
	NodeDeleteWeight, ControllerRestartWeight                              int
}

// weights lists the fault kinds' weights, in the order of faultKind.
func (f Faults) weights() []int {
	return []int{f.KillWeight, f.TerminateWeight, f.RebootWeight, f.ReplaceWeight, f.DeleteWeight,
		f.PartitionWeight, f.OutOfServiceWeight, f.ConsoleDetachWeight, f.NodeDeleteWeight, f.ControllerRestartWeight}
}

// DefaultConfig is a small cluster with every fault on. Timings are
// tether's defaults, except MaxWaitForUnmount (2 min instead of 6) so that
// force detach happens within the faulty phase.
func DefaultConfig() Config {
	vc := volume.DefaultConfig()
	vc.MaxWaitForUnmount = 2 * time.Minute
	vc.Backoff = backoff.Default
	vc.Backoff.Jitter = 0.1
	ac := reconciler.DefaultConfig()
	ac.Backoff.Jitter = 0.1
	ac.OpTimeout = 2 * time.Minute // the node agent's default
	return Config{
		Nodes: 3, Volumes: 5, MultiNode: 2, InitialWorkloads: 3,
		Churn:          10 * time.Minute,
		SyncPeriod:     time.Minute,
		CloudTimeout:   time.Minute,
		HeartbeatEvery: 10 * time.Second,
		BatchSize:      2,
		Volume:         vc,
		Node:           nodestatus.DefaultConfig(),
		Agent:          ac,
		Faults: Faults{
			WorkloadEvery: 20 * time.Second, FaultEvery: 30 * time.Second,
			CloudError: 0.1, LostResponse: 0.03, HangCall: 0.02, DupResult: 0.03, PersistFail: 0.05, MountFail: 0.05,
			SlowMount: 0.03, HangMount: 0.01,
			LinkDrop: 0.02, LinkDup: 0.02, LinkDelay: 0.05,
			KillWeight: 6, TerminateWeight: 1, RebootWeight: 1, ReplaceWeight: 1, DeleteWeight: 1,
			PartitionWeight: 1, OutOfServiceWeight: 1, ConsoleDetachWeight: 1, NodeDeleteWeight: 1, ControllerRestartWeight: 1,
		},
		MaxSteps:   400000,
		ShrinkRuns: 300,
	}
}

// CalmDeadline is the I5 deadline after the faults stop: one sync period
// (a lost attachment is noticed), the largest backoff of the volume or the
// agent (a retry that failed just before the calm), one cloud timeout (a
// rebuilt volume's fence, the operations themselves), and the heartbeat
// timeout (a node NotReady at the calm becomes Ready again).
func (c Config) CalmDeadline() time.Duration {
	if c.Calm > 0 {
		return c.Calm
	}
	return c.SyncPeriod + max(c.Volume.Backoff.Max, c.Agent.Backoff.Max) + c.CloudTimeout + c.Node.NotReadyAfter
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string // "I1" ... "I5", or "Steps" for a run that never ends
	Volume    string
	Node      string
	Time      time.Duration // virtual time since the start of the run
	Detail    string
	// History is the trace lines about the volume and the node (and the
	// faults), up to the violation.
	History []string
}

// Result of one run.
type Result struct {
	Seed       uint64
	Violations []Violation
	// Trace of the run (every delivery, cloud call, disk operation, fault
	// and event), with Config.Trace or when the run violated an invariant.
	Trace []string
	// Plan is the faults and churn decisions the run applied, in order.
	Plan          []string
	Steps         int
	Kills         int
	Faults        int           // plan decisions applied (kills, churn and message, cloud, store and mount faults)
	ForceDetaches int           // forced detaches that detached something
	ConvergedAt   time.Duration // first time I5 held after the calm began (-1: never)
	End           time.Duration

	// After a violation: the shrunk plan, the violation of its run and
	// that run's trace lines about the violation's volume and node (and the
	// faults), and how many re-runs shrinking took.
	MinimalPlan      []string
	MinimalViolation Violation
	MinimalTrace     []string
	ShrinkRuns       int

	applied   []string        // the applied plan decisions
	appliedAt []time.Duration // when they happened
}
