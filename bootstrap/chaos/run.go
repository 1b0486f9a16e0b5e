package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/backoff"
	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/limit"
	"github.com/tether/tether/node"
)

// Config of a chaos run.
type Config struct {
	Seed     uint64
	Duration time.Duration // of the fault phase
	Volumes  int
	Nodes    int
	DataDir  string // "" = a temporary directory, removed afterwards
	Log      io.Writer
	// Break (one of Breaks) turns on the test-only hooks that make tether
	// break that invariant, to prove the checker catches it. "" breaks
	// nothing.
	Break string
	// Converge bounds the wait for convergence after the faults; 0 means
	// Deadline().
	Converge time.Duration
	// CloudLimit, if set, puts tether's client-side limit (cloud/limit)
	// between the controller and the faulty cloud.
	CloudLimit limit.Config
}

// Report of a run; tether chaos --json prints it.
type Report struct {
	Seed            uint64         `json:"seed"`
	Kills           int            `json:"kills"`
	Restarts        int            `json:"restarts"`
	Faults          int            `json:"faults"`
	Violations      int            `json:"violations"`
	Converged       bool           `json:"converged"`
	ConvergeSeconds float64        `json:"converge_seconds"`
	KillsByKind     map[string]int `json:"kills_by_kind"`
	FaultsByKind    map[string]int `json:"faults_by_kind"`
	ForcedDetaches  int            `json:"forced_detaches"`
	MountCalls      int            `json:"mount_calls"` // stages and publishes started
	// Found lists the violations: I1-I4 judged on the timeline, I5 from
	// the ground truth after the convergence wait.
	Found []Violation `json:"violation_details"`
}

// timings of a chaos run: short, so that convergence is quick to prove.
var (
	opBackoff   = backoff.Policy{Initial: 100 * time.Millisecond, Factor: 2, Max: 2 * time.Second, Jitter: 0.1}
	syncPeriod  = time.Second
	cloudTimout = 3 * time.Second
)

// Deadline is how long convergence may take once faults stop: a sync
// period, the longest backoff (operations and restarts), a fence of one
// cloud timeout, and slack for the operations themselves and for chains of
// timeouts (an unanswered prepare or attachment report waits 5 s).
func Deadline() time.Duration {
	return syncPeriod + 2*opBackoff.Max + cloudTimout + 30*time.Second
}

// embeddedConfig: short timings, a permissive cloud, chk recording, and
// the breaks asked for.
func embeddedConfig(cfg Config, dir string, restarts *atomic.Int64, chk *Checker) bootstrap.Config {
	ec := bootstrap.DefaultConfig()
	ec.DataDir, ec.Nodes, ec.LogLevel = dir, cfg.Nodes, "error"
	if cfg.Log != nil {
		ec.LogOutput = cfg.Log
	}
	cc := &ec.Controller
	cc.SyncPeriod, cc.CloudTimeout = syncPeriod, cloudTimout
	cc.Volume.Backoff, cc.Respawn, cc.RetireAfter = opBackoff, opBackoff, 2*time.Second
	cc.Volume.PrepareTimeout = 5 * time.Second
	cc.Supervisor.Policy, cc.Supervisor.Quiet = opBackoff, 10*time.Second
	cc.Supervisor.OnRestart = func(*actor.PID, int, time.Duration, interface{}) { restarts.Add(1) }
	cc.OnRespawn = func(string, time.Duration) { restarts.Add(1) }
	ec.Agent.Agent.Backoff = opBackoff
	ec.Agent.HeartbeatEvery = time.Second
	// A cloud that refuses a second exclusive attach would hide I1.
	ec.Sim.Permissive = true
	ec.CloudLimit = cfg.CloudLimit
	chk.Wire(&ec)
	breakRule(&ec, cfg.Break)
	if cfg.Break == "I3-device" {
		ec.WrapDevices = func(n cloud.NodeName, _ node.Devices) node.Devices {
			return chk.WrapDevices(n, trustingDevices{content: filepath.Join(dir, "cloud")})
		}
	}
	return ec
}

// Breaks are what Config.Break can break: a rule, through the test-only
// hooks of tether's cores, or "I3-device", I3 through the agents' wiring
// (device paths trusted without a check, see trustingDevices).
var Breaks = []string{"I1", "I2", "I3", "I3-device", "I4", "I5"}

// breakRule turns on the test-only hooks that break rule inv.
func breakRule(ec *bootstrap.Config, inv string) {
	cc := &ec.Controller
	switch inv {
	case "I1":
		cc.Volume.BreakMultiAttach = true
	case "I2":
		cc.Volume.BreakIgnoreInUse, cc.Node.BreakIgnoreInUse = true, true
	case "I3":
		ec.Agent.Agent.BreakMountBeforeInUse = true
	case "I4":
		cc.Node.BreakPrepareBeforeWrite = true
	case "I5":
		cc.Volume.BreakNeverDetach = true
	}
}

// Run executes one chaos run: faults from the seed's plan while workloads
// churn, then calm, then a bounded wait for convergence.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Seed: cfg.Seed, KillsByKind: map[string]int{}, FaultsByKind: map[string]int{}}
	if cfg.Break != "" && !slices.Contains(Breaks, cfg.Break) {
		return rep, fmt.Errorf("chaos: cannot break %q: want one of %v", cfg.Break, Breaks)
	}
	dir := cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tether-chaos-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	var restarts atomic.Int64
	chk := &Checker{}
	e, err := bootstrap.StartEmbedded(embeddedConfig(cfg, dir, &restarts, chk))
	if err != nil {
		return rep, err
	}
	r := &runner{cfg: cfg, e: e, chk: chk, rep: &rep}
	defer r.teardown()
	chk.Watch(e)
	if err := r.setup(); err != nil {
		return rep, err
	}
	if err := r.faults(ctx); err != nil {
		return rep, err
	}
	if err := r.calm(); err != nil {
		return rep, err
	}
	limit := cfg.Converge
	if limit <= 0 {
		limit = Deadline()
	}
	t0 := time.Now()
	i5 := r.converge(ctx, limit)
	rep.Converged, rep.ConvergeSeconds = len(i5) == 0, time.Since(t0).Seconds()
	rep.Restarts = int(restarts.Load())
	rep.ForcedDetaches, rep.MountCalls = chk.ForcedDetaches(), chk.MountCalls()
	rep.Found = append(chk.Violations(), i5...)
	rep.Violations = len(rep.Found)
	return rep, nil
}

// teardown stops everything and removes the mounts the run left.
func (r *runner) teardown() {
	r.e.Stop()
	for _, n := range r.e.NodeNames {
		if m, err := r.e.Mounter(n); err == nil {
			node.Teardown(r.e.NodeDir(n), m)
		}
	}
}
