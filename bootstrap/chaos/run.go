package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/backoff"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node"
	"github.com/tether/tether/node/mount"
)

// Config of a chaos run.
type Config struct {
	Seed     uint64
	Duration time.Duration // of the fault phase
	Volumes  int
	Nodes    int
	DataDir  string // "" = a temporary directory, removed afterwards
	Log      io.Writer
	// BreakI2 turns on the test-only hooks that make tether detach volumes
	// in use, to prove the checker catches it.
	BreakI2 bool
}

// Report of a run. The first fields are the --json output.
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
	Details         []string       `json:"violation_details,omitempty"`
	NotConverged    string         `json:"not_converged,omitempty"`
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

func embeddedConfig(cfg Config, dir string, restarts *atomic.Int64) bootstrap.Config {
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
	cc.Volume.BreakIgnoreInUse, cc.Node.BreakIgnoreInUse = cfg.BreakI2, cfg.BreakI2
	ec.Agent.Agent.Backoff = opBackoff
	ec.Agent.HeartbeatEvery = time.Second
	return ec
}

// Run executes one chaos run: faults from the seed's plan while workloads
// churn, then calm, then a bounded wait for convergence.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Seed: cfg.Seed, KillsByKind: map[string]int{}, FaultsByKind: map[string]int{}}
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
	chk := &Checker{Now: time.Now}
	ec := embeddedConfig(cfg, dir, &restarts)
	ec.WrapMounter = chk.WrapMounter
	ec.WrapStore = func(s store.Store) store.Store { return recordingStore{Store: s, c: chk} }
	e, err := bootstrap.StartEmbedded(ec)
	if err != nil {
		return rep, err
	}
	r := &runner{cfg: cfg, e: e, chk: chk, rep: &rep}
	defer r.teardown()
	chk.Cloud, chk.NodeDir = e.Cloud, e.NodeDir
	chk.Store = func() store.Store { return e.Store }
	chk.Mounter = func(n cloud.NodeName) mount.Mounter { m, _ := e.Mounter(n); return m }
	e.Cloud.Observe(chk.OnChange)
	e.Events.Subscribe(func(ev events.Event) { chk.OnEvent(ev) })
	if err := r.setup(); err != nil {
		return rep, err
	}
	if err := r.faults(ctx); err != nil {
		return rep, err
	}
	r.calm()
	t0 := time.Now()
	rep.Converged, rep.NotConverged = r.converge(ctx, Deadline())
	rep.ConvergeSeconds = time.Since(t0).Seconds()
	rep.Restarts = int(restarts.Load())
	rep.ForcedDetaches = chk.ForcedDetaches()
	for _, v := range chk.Violations() {
		rep.Details = append(rep.Details, v.String()+"\n    history: "+fmt.Sprint(v.History))
	}
	rep.Violations = len(rep.Details)
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
