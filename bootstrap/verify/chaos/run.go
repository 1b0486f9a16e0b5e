package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/faulty"
	"github.com/tether/tether/cloud/limit"
	"github.com/tether/tether/node/agent"
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
	// Cloud is process.CloudSim ("" too) or process.CloudLoop: real
	// loop devices (root only), exclusive volumes only, the cloud's faults
	// injected by a faulty.Provider in front of it, every mount and loop device
	// released at the end (loop.go). Or process.CloudCSI: csitest's
	// fake CSI driver, served in this process, one node plugin per node,
	// its faults and restarts from its own hooks, the timeline its own
	// (csi.go).
	Cloud string
	// LoopVolumeSize is the size of each disk on the loop cloud (0:
	// process.DefaultLoopVolumeSize).
	LoopVolumeSize int64
	// UI serves the operator's page for the run (embedded runs, page.go):
	// OnUI, if set, is told its address and the token's file.
	UI   bool
	OnUI func(url, tokenFile string)
}

// Report of a run; tether chaos --json prints it.
type Report struct {
	Seed            uint64         `json:"seed"`
	Cloud           string         `json:"cloud,omitempty"` // sim, loop or csi (embedded runs)
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
	// DecisionsChecked counts the mount calls judged against the node
	// status their agent had received when it started them (I3).
	DecisionsChecked int `json:"decisions_checked"`
	// StagesChecked counts the stages whose device the last convergence
	// check compared with the volume's current one (I5; not on CSI).
	StagesChecked int `json:"stages_checked"`
	// DisksChecked counts the mounts whose disk the checker read (the
	// loop cloud: Checker.CheckImages).
	DisksChecked int `json:"disks_checked,omitempty"`
	// DriverCalls counts the mutating calls the CSI driver received, and
	// DriverFaults the faults its hooks injected into them, by kind
	// (csiFaults); CSI only.
	DriverCalls  int            `json:"driver_calls,omitempty"`
	DriverFaults map[string]int `json:"driver_faults,omitempty"`
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

// embeddedConfig: short timings, a permissive sim (the loop cloud is
// strict: see checkLoop), chk recording, and the breaks asked for. On the
// loop cloud, the controller calls it through a faulty.Provider, whose
// knobs *faults is set to.
func embeddedConfig(cfg Config, dir string, restarts *atomic.Int64, chk *Checker, faults **faulty.Faults) process.Config {
	ec := process.DefaultConfig()
	ec.DataDir, ec.Nodes, ec.LogLevel = dir, cfg.Nodes, "error"
	if cfg.Log != nil {
		ec.LogOutput = cfg.Log
	}
	cc := &ec.Controller
	cc.SyncPeriod, cc.CloudTimeout = syncPeriod, cloudTimout
	cc.Volume.Backoff, cc.Respawn, cc.RetireAfter = opBackoff, opBackoff, 2*time.Second
	// Settled volumes passivate within the run, and wake under the faults.
	cc.PassivateAfter = 2 * time.Second
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
	if cfg.Cloud == process.CloudLoop {
		ec.Cloud, ec.Loop.VolumeSize = process.CloudLoop, cfg.LoopVolumeSize
		ec.WrapProvider = func(p cloud.Provider) cloud.Provider {
			*faults = faulty.New(faulty.Config{Seed: cfg.Seed, Name: "chaos"})
			return faulty.Wrap(p, *faults)
		}
	}
	switch cfg.Break {
	case "I3-device":
		breakDevices(&ec, cfg.Cloud, dir, chk)
	case "I5-device":
		ec.WrapDevices = func(n cloud.NodeName, d agent.Devices) agent.Devices {
			return chk.WrapDevices(n, &staleDevices{Devices: d})
		}
	}
	return ec
}

// breakDevices makes the agents trust device paths without a check
// (Break "I3-device"), still recorded by chk.
func breakDevices(ec *process.Config, kind, dir string, chk *Checker) {
	var trusting agent.Devices = trustingDevices{content: filepath.Join(dir, "cloud")}
	if kind == process.CloudLoop {
		trusting = trustingLoopDevices{}
	}
	ec.WrapDevices = func(n cloud.NodeName, _ agent.Devices) agent.Devices { return chk.WrapDevices(n, trusting) }
}

// Breaks are what Config.Break can break: a rule, through the test-only
// hooks of tether's cores, "I3-device", I3 through the agents' wiring
// (device paths trusted without a check, see trustingDevices), or
// "I5-device", I5 through it too (stages from a device cache never
// invalidated, see staleDevices). An agent
// acting on a stale status (reconciler.Config.BreakStaleStatus) is not
// among them: a run seldom withdraws a listing an agent is about to act
// on, so TestStageJudgedAgainstTheReceivedStatus scripts it.
var Breaks = []string{"I1", "I2", "I3", "I3-device", "I4", "I5", "I5-device"}

// breakRule turns on the test-only hooks that break rule inv.
func breakRule(ec *process.Config, inv string) {
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
// churn, then calm, then a bounded wait for convergence. On the loop
// cloud every mount and loop device of the run is released before it
// returns, whatever happened (a failure to release is an error, and a
// temporary data directory then stays, for the cleanup by hand of
// docs/storage.md).
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	rep = Report{Seed: cfg.Seed, KillsByKind: map[string]int{}, FaultsByKind: map[string]int{}}
	if rep.Cloud, err = checkConfig(cfg); err != nil {
		return rep, err
	}
	dir, removeDir, err := runDir(cfg.DataDir, rep.Cloud)
	if err != nil {
		return rep, err
	}
	var restarts atomic.Int64
	var faults *faulty.Faults
	var drv *csiRig
	chk := &Checker{}
	ec := embeddedConfig(cfg, dir, &restarts, chk, &faults)
	if rep.Cloud == process.CloudCSI {
		if drv, err = startCSI(cfg, chk); err != nil {
			removeDir()
			return rep, err
		}
		drv.configure(&ec)
	}
	var m *metrics.Metrics
	if cfg.UI {
		if m, err = metrics.New(); err != nil {
			removeDir()
			return rep, err
		}
		ec.Metrics = m
	}
	var pg *page
	e, err := process.StartEmbedded(ec)
	defer func() {
		ferr := errors.Join(pg.close(), finish(e, dir, rep.Cloud), drv.close()) // the page, tether, then its driver
		if ferr == nil {
			removeDir()
		}
		err = errors.Join(err, ferr)
	}()
	if err != nil {
		return rep, err
	}
	if cfg.UI {
		if pg, err = servePage(cfg, e, m, dir); err != nil {
			return rep, err
		}
	}
	r := &runner{cfg: cfg, e: e, chk: chk, rep: &rep, csi: drv, page: pg}
	if err := r.wire(faults); err != nil {
		return rep, err
	}
	chk.Watch(e)
	if err := r.run(ctx); err != nil {
		return rep, err
	}
	rep.Restarts = int(restarts.Load())
	return rep, nil
}

// checkConfig returns the run's cloud, or why cfg cannot run.
func checkConfig(cfg Config) (string, error) {
	if cfg.Cloud != process.CloudCSI && cfg.Break != "" && !slices.Contains(Breaks, cfg.Break) {
		return "", fmt.Errorf("chaos: cannot break %q: want one of %v", cfg.Break, Breaks)
	}
	switch cfg.Cloud {
	case "", process.CloudSim:
		return process.CloudSim, nil
	case process.CloudLoop:
		return process.CloudLoop, checkLoop(cfg)
	case process.CloudCSI:
		if cfg.Break != "" && !slices.Contains(CSIBreaks, cfg.Break) {
			return "", fmt.Errorf("chaos: cannot break %q on CSI: want one of %v", cfg.Break, CSIBreaks)
		}
		return process.CloudCSI, nil
	}
	return "", fmt.Errorf("chaos: unknown cloud %q: want %s, %s or %s", cfg.Cloud, process.CloudSim, process.CloudLoop, process.CloudCSI)
}

// runDir returns the run's data directory (dir, or a temporary one) and
// what removes it afterwards (a temporary one only); on the loop cloud
// with its symlinks resolved (loopDir).
func runDir(dir, kind string) (string, func(), error) {
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tether-chaos-")
		if err != nil {
			return "", nil, err
		}
		dir, remove = tmp, func() { os.RemoveAll(tmp) }
	}
	if kind == process.CloudLoop {
		resolved, err := loopDir(dir)
		if err != nil {
			remove()
			return "", nil, fmt.Errorf("chaos: data directory: %w", err)
		}
		dir = resolved
	}
	return dir, remove, nil
}

// finish stops e (nil: it did not start) and removes the mounts it left;
// on the loop cloud it releases every loop device of the run too, and
// says what it could not release. On CSI the driver's "mounts" are
// directories under the run's directory: they go with it.
func finish(e *process.Embedded, dir, kind string) error {
	if kind == process.CloudLoop {
		return releaseLoop(e, dir)
	}
	if e != nil {
		e.Stop()
		if kind != process.CloudCSI {
			unmountNodes(e) // a throw-away directory: what stays goes with it
		}
	}
	return nil
}

// run sets up the volumes, runs the plan, calms everything and waits for
// convergence, filling the report.
func (r *runner) run(ctx context.Context) error {
	if err := r.setup(); err != nil {
		return err
	}
	if err := r.faults(ctx); err != nil {
		return err
	}
	if err := r.calm(); err != nil {
		return err
	}
	limit := r.cfg.Converge
	if limit <= 0 {
		limit = Deadline()
	}
	t0 := time.Now()
	i5 := r.converge(ctx, limit)
	rep, chk := r.rep, r.chk
	rep.Converged, rep.ConvergeSeconds = len(i5) == 0, time.Since(t0).Seconds()
	rep.ForcedDetaches, rep.MountCalls, rep.DisksChecked = chk.ForcedDetaches(), chk.MountCalls(), chk.DisksChecked()
	rep.DecisionsChecked = chk.DecisionsChecked()
	if r.csi != nil {
		rep.DriverCalls, rep.DriverFaults = int(r.csi.calls.Load()), r.csi.faults.Injected()
	}
	rep.Found = append(chk.Violations(), i5...)
	rep.Violations = len(rep.Found)
	return nil
}

// wire gives the runner its cloud's account and fault knobs: the sim's
// own, a faulty.Provider's in front of the loop cloud, or the CSI
// driver's hooks.
func (r *runner) wire(faults *faulty.Faults) error {
	if r.csi != nil {
		r.acct, r.knobs = driverAccount{r.e.Account}, r.csi.faults
		return nil
	}
	a, ok := r.e.Account.(account)
	if !ok {
		return fmt.Errorf("chaos: the %s cloud's account cannot replace instances or detach from its console", r.rep.Cloud)
	}
	r.acct = a
	switch {
	case r.e.Cloud != nil:
		r.knobs = cloudKnobs{r.e.Cloud.Faults}
	case faults != nil:
		r.knobs = cloudKnobs{faults}
	default:
		return fmt.Errorf("chaos: the %s cloud has no fault knobs", r.rep.Cloud)
	}
	return nil
}
