package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether/tether/actors/runtime/dispatch"
	"github.com/tether/tether/actors/runtime/heapstat"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Config of a bench run.
type Config struct {
	Volumes int
	Nodes   int
	// CloudLatency is added to every sim cloud call.
	CloudLatency time.Duration
	// AttachLimit is how many volumes each sim instance may have attached
	// (0: sim.DefaultAttachLimit). Validate wants it at least
	// PeakPerNode(Volumes, Nodes).
	AttachLimit int
	// Mounter: "symlink" (default, no privileges), "bind" (real bind
	// mounts, root only; all agents share this host's mount table) or
	// "memory" (an in-memory mount table per node, mount.Memory: every
	// agent's logic runs, the kernel's mount work is left out, so the
	// control plane is measured on its own).
	Mounter string
	// SyncPeriod of the controller (node loss is noticed by a sync pass).
	SyncPeriod time.Duration
	// PhaseTimeout bounds each phase.
	PhaseTimeout time.Duration
	// PassivateAfter is the controller's (controller.Config): settled
	// volumes' actors stop after this long idle; 0 never.
	PassivateAfter time.Duration
	// Dir, if set, is where the temporary data directory is made.
	Dir string
	// MachinesDir, if set, is where the simulated machines' disks are
	// made, in a temporary directory of their own: each node agent's
	// directory (nodes/<node>, its mounts) and the sim volumes' contents
	// (cloud/). On a real fleet those are other machines' disks, each
	// working in parallel; by default they share the data directory's
	// disk with the store and the cloud's state, whose writes and fsyncs
	// stay there either way.
	MachinesDir string
	// Log receives tether's own log (warnings and errors); nil: discarded.
	Log io.Writer
	// Progress, if set, hears one line as each phase starts.
	Progress io.Writer
	// HeapProfile, if set, is written the heap profile at rest (after the
	// fleet start), for go tool pprof.
	HeapProfile string
	// CPUProfile, if set with ProfilePhase, receives a CPU profile of that
	// phase alone.
	CPUProfile   string
	ProfilePhase string
}

// DefaultConfig is the acceptance run: 10,000 volumes over 1,000 nodes.
func DefaultConfig() Config {
	return Config{Volumes: 10000, Nodes: 1000, Mounter: "symlink", SyncPeriod: 5 * time.Second, PhaseTimeout: 10 * time.Minute, PassivateAfter: 2 * time.Second}
}

// MaxAttachLimit bounds Config.AttachLimit (--attach-limit).
const MaxAttachLimit = 100_000

// attachLimit is the sim instances' attach limit of the run.
func (c Config) attachLimit() int {
	if c.AttachLimit == 0 {
		return sim.DefaultAttachLimit
	}
	return c.AttachLimit
}

// PeakPerNode is the most volumes one node has attached at once in a run
// of volumes over nodes: its share of the fleet start (workload i on node
// i mod nodes), and, during the churn (every tenth workload to the next
// node), every volume moving onto it, which may be attached before the
// volumes moving off it are detached. When nodes is a multiple of 10, every
// workload of node 0 (and 10, 20, ...) is a tenth one, and all of them move
// to node 1 (11, 21, ...): twice its share.
func PeakPerNode(volumes, nodes int) int {
	if volumes < 1 || nodes < 1 {
		return 0
	}
	on := make([]int, nodes)
	for i := range volumes {
		on[i%nodes]++
	}
	for i := 0; i < volumes; i += 10 { // as phases.go's churn
		if to := (i + 1) % nodes; to != i%nodes {
			on[to]++
		}
	}
	return slices.Max(on)
}

// Validate names what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.Volumes < 1:
		return fmt.Errorf("bench: --volumes %d: want at least 1", c.Volumes)
	case c.Nodes < 1:
		return fmt.Errorf("bench: --nodes %d: want at least 1", c.Nodes)
	case c.Volumes > 1_000_000:
		return fmt.Errorf("bench: --volumes %d: want at most 1000000", c.Volumes)
	case c.Nodes > 100_000:
		return fmt.Errorf("bench: --nodes %d: want at most 100000", c.Nodes)
	case c.AttachLimit < 0 || c.AttachLimit > MaxAttachLimit:
		return fmt.Errorf("bench: --attach-limit %d: want 1 to %d (0 in a Config: the sim's default, %d)", c.AttachLimit, MaxAttachLimit, sim.DefaultAttachLimit)
	}
	// Volumes and Nodes are in range: PeakPerNode's work is bounded.
	if peak := PeakPerNode(c.Volumes, c.Nodes); peak > c.attachLimit() {
		return fmt.Errorf("bench: %d volumes over %d nodes put up to %d on one node (its share, and during the churn phase the volumes moving onto it), more than the attach limit %d: give more nodes, or --attach-limit %d",
			c.Volumes, c.Nodes, peak, c.attachLimit(), peak)
	}
	switch {
	case c.CloudLatency < 0 || c.CloudLatency > 10*time.Second:
		return fmt.Errorf("bench: --cloud-latency %s: want 0 to 10s", c.CloudLatency)
	case c.Mounter != "symlink" && c.Mounter != "bind" && c.Mounter != "memory":
		return fmt.Errorf("bench: --mounter %q: want symlink, bind or memory", c.Mounter)
	case c.Mounter == "bind" && os.Geteuid() != 0:
		return errors.New("bench: --mounter bind needs root (bind mounts)")
	case c.SyncPeriod < time.Second:
		return fmt.Errorf("bench: --sync-period %s: want at least 1s", c.SyncPeriod)
	case c.PassivateAfter < 0:
		return fmt.Errorf("bench: --passivate-after %s: want 0 (never) or more", c.PassivateAfter)
	case c.PhaseTimeout <= 0:
		return fmt.Errorf("bench: --phase-timeout %s: want more than 0", c.PhaseTimeout)
	case c.ProfilePhase != "" && !slices.Contains(phaseNames, c.ProfilePhase):
		return fmt.Errorf("bench: --profile-phase %q: want one of %v", c.ProfilePhase, phaseNames)
	}
	return nil
}

// phaseNames are the phases, in order.
var phaseNames = []string{"fleet_start", "verify", "restart", "node_loss", "churn", "teardown"}

// Phase is the result of one phase.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Messages received by tether's actors (controller and agents).
	Messages int64 `json:"messages"`
	// CloudCalls by method, as the cloud counted them.
	CloudCalls map[string]int `json:"cloud_calls"`
	// Fsyncs of the store and the cloud's state.
	Fsyncs int64 `json:"fsyncs"`
	// Mounts: the stages and publishes the agents asked their mounters
	// for (repeats included). A restart that reconstructed every mount
	// from what is on the machines asks for none.
	Mounts int64 `json:"mounts"`
	// BaselineRatio: Seconds over the time bare Proto.Actor takes to
	// deliver Messages messages over as many actors as the fleet has.
	BaselineRatio float64 `json:"baseline_ratio"`
	// Note says what the phase did, for the text report.
	Note string `json:"note,omitempty"`
}

// Result of a run.
type Result struct {
	Volumes            int     `json:"volumes"`
	Nodes              int     `json:"nodes"`
	AttachLimit        int     `json:"attach_limit"`
	CloudLatencyMillis float64 `json:"cloud_latency_ms"`
	Mounter            string  `json:"mounter"`
	SyncPeriodSeconds  float64 `json:"sync_period_seconds"`
	BatchSize          int     `json:"batch_size"`
	// MachinesApart: the simulated machines' disks were under
	// Config.MachinesDir, apart from the data directory.
	MachinesApart bool    `json:"machines_apart"`
	Phases        []Phase `json:"phases"`
	// HeapBytesPerVolume: live heap after the fleet start (after a GC),
	// less the live heap before it, over the volumes: controller, agents,
	// store and sim cloud together.
	HeapBytesPerVolume float64 `json:"heap_bytes_per_volume"`
	// VolumeActorsAtRest: the volume actors still live when the heap was
	// measured, after the settled ones passivated (Config.PassivateAfter;
	// waited for up to restWait).
	VolumeActorsAtRest int64 `json:"volume_actors_at_rest"`
	PeakRSSBytes       int64 `json:"peak_rss_bytes"`
	// SyscallsPerOp: the system calls the agents' mounters made per
	// operation ("stage", "publish", "unpublish", "unstage"), averaged
	// over the run's operations (mount.Syscalls; 0 for one that never
	// ran).
	SyscallsPerOp map[string]float64 `json:"syscalls_per_op"`
	// Baseline: bare Proto.Actor delivering the fleet start's messages
	// over as many actors.
	BaselineSeconds  float64 `json:"baseline_seconds"`
	BaselineMessages int64   `json:"baseline_messages"`
	BaselineActors   int     `json:"baseline_actors"`
}

// run is one bench run's state.
type run struct {
	cfg      Config
	dir      string
	machines string // holds nodes/ and cloud/: dir, or one under MachinesDir
	e        *process.Embedded
	client   *client
	truth    *truth
	messages atomic.Int64
	mounts   atomic.Int64 // Phase.Mounts
	nodes    []cloud.NodeName
	// mem is the machines' mount tables with --mounter memory: they
	// outlive a restart, as a machine's mounts do.
	mem *mount.Memory
	// syncsBefore: syncs of stopped incarnations (restart), so that a
	// phase's fsyncs add up across it.
	syncsBefore int64
	res         Result
}

// Run runs the bench. Everything it creates (the data directory, mounts)
// is removed before it returns, even on failure. A run that fails in a
// phase returns the phases measured before it with its error.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "tether-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &run{cfg: cfg, dir: dir, machines: dir, truth: newTruth()}
	if cfg.Mounter == "memory" {
		r.mem = mount.NewMemory()
	}
	if cfg.MachinesDir != "" {
		if r.machines, err = os.MkdirTemp(cfg.MachinesDir, "tether-bench-machines-"); err != nil {
			return nil, errors.Join(fmt.Errorf("bench: --machines-dir: %w", err), os.RemoveAll(dir))
		}
		if r.machines, err = filepath.Abs(r.machines); err != nil {
			return nil, errors.Join(fmt.Errorf("bench: --machines-dir: %w", err), os.RemoveAll(dir), os.RemoveAll(r.machines))
		}
	}
	r.res = Result{Volumes: cfg.Volumes, Nodes: cfg.Nodes, AttachLimit: cfg.attachLimit(), CloudLatencyMillis: float64(cfg.CloudLatency) / 1e6, Mounter: cfg.Mounter, SyncPeriodSeconds: cfg.SyncPeriod.Seconds(), MachinesApart: cfg.MachinesDir != ""}
	defer func() { err = errors.Join(err, r.cleanup()) }()
	sys0 := mount.Syscalls()
	if err := r.start(); err != nil {
		return nil, err
	}
	r.res.BatchSize = r.e.Cloud.BatchSize()
	heapBefore := heapstat.Live()
	steps := []struct {
		name string
		do   func(context.Context) (string, error)
	}{
		{"fleet_start", r.fleetStart},
		{"verify", r.verify},
		{"restart", r.restart},
		{"node_loss", r.nodeLoss},
		{"churn", r.churn},
		{"teardown", r.teardown},
	}
	for _, s := range steps {
		p, err := r.phase(ctx, s.name, s.do)
		if err != nil {
			out := r.res // what was measured, for the caller to show
			return &out, fmt.Errorf("bench: %s: %w", s.name, err)
		}
		r.res.Phases = append(r.res.Phases, p)
		if s.name == "fleet_start" {
			r.res.VolumeActorsAtRest = r.rest(ctx)
			r.res.HeapBytesPerVolume = float64(int64(heapstat.Live())-int64(heapBefore)) / float64(cfg.Volumes)
			if err := writeHeapProfile(cfg.HeapProfile); err != nil {
				return nil, err
			}
		}
	}
	r.res.BaselineActors = cfg.Volumes + 2*cfg.Nodes + 1
	r.res.BaselineMessages = r.res.Phases[0].Messages
	bare := bareDelivery(r.res.BaselineActors, r.res.BaselineMessages)
	r.res.BaselineSeconds = bare.Seconds()
	perMsg := bare.Seconds() / float64(max(1, r.res.BaselineMessages))
	for i := range r.res.Phases {
		p := &r.res.Phases[i]
		if p.Messages > 0 && perMsg > 0 {
			p.BaselineRatio = p.Seconds / (perMsg * float64(p.Messages))
		}
	}
	r.res.PeakRSSBytes = peakRSS()
	r.res.SyscallsPerOp = syscallsPerOp(mount.SyscallsSince(sys0))
	out := r.res
	return &out, nil
}

// phase runs one phase and measures it.
func (r *run) phase(ctx context.Context, name string, do func(context.Context) (string, error)) (Phase, error) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "bench: %s...\n", name)
	}
	calls0, msgs0, syncs0, mounts0 := r.e.Cloud.Calls(), r.messages.Load(), r.syncs(), r.mounts.Load()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PhaseTimeout)
	defer cancel()
	stop, err := r.profile(name)
	if err != nil {
		return Phase{}, err
	}
	t0 := time.Now()
	note, err := do(ctx)
	d := time.Since(t0)
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		return Phase{}, err
	}
	calls := r.e.Cloud.Calls() // the counters are durable: they carry over a restart
	p := Phase{Name: name, Seconds: d.Seconds(), Messages: r.messages.Load() - msgs0, CloudCalls: map[string]int{}, Fsyncs: r.syncs() - syncs0, Mounts: r.mounts.Load() - mounts0, Note: note}
	for m, n := range calls.Calls {
		if dn := n - calls0.Calls[m]; dn > 0 {
			p.CloudCalls[string(m)] = dn
		}
	}
	if bad := r.truth.twice(); len(bad) > 0 {
		return p, fmt.Errorf("%d volumes attached or mounted on two nodes (%s first)", len(bad), bad[0])
	}
	return p, nil
}

func (r *run) syncs() int64 { return r.syncsBefore + r.e.Syncs() }

// start starts the embedded runtime on r.dir (again, after a restart).
func (r *run) start() error {
	cfg := process.DefaultConfig()
	cfg.LogLevel, cfg.LogOutput = "warn", r.cfg.Log
	if cfg.LogOutput == nil {
		cfg.LogOutput = io.Discard
	}
	cfg.DataDir, cfg.Durable, cfg.Nodes = r.dir, true, r.cfg.Nodes
	if r.machines != r.dir {
		cfg.NodesDir = filepath.Join(r.machines, "nodes")
		cfg.Sim.ContentDir = filepath.Join(r.machines, "cloud")
	}
	cfg.Sim.Latency, cfg.Sim.AttachLimit = r.cfg.CloudLatency, r.cfg.AttachLimit
	// The memory mounter never reads a source: the volumes' contents, the
	// machines' disks, are named and not made, as their mounts are.
	cfg.Sim.VirtualContent = r.mem != nil
	cfg.Controller.SyncPeriod = r.cfg.SyncPeriod
	cfg.Controller.PassivateAfter = r.cfg.PassivateAfter
	// The mailboxes count the messages: a receiver middleware would give
	// every actor Proto.Actor's per-actor extras and wrap every message,
	// which tether up does not pay.
	count := dispatch.Mailbox(dispatch.CountReceived(&r.messages))
	cfg.Controller.Mailbox, cfg.Agent.Mailbox = count, count
	switch r.cfg.Mounter {
	case "bind":
		cfg.NewMounter = mount.NewBind
	case "memory":
		cfg.NewMounter = r.mem.Mounter
	default:
		cfg.NewMounter = mount.NewSymlink
	}
	cfg.WrapMounter = func(n cloud.NodeName, m mount.Mounter) mount.Mounter {
		return tracked{Mounter: m, node: n, truth: r.truth, mounts: &r.mounts}
	}
	e, err := process.StartEmbedded(cfg)
	if err != nil {
		return err
	}
	r.e = e
	r.truth.load(r.attachments())
	e.Cloud.ObserveSync(r.truth.observe)
	r.nodes = e.NodeNames
	c, err := startClient(e, r.dir)
	if err != nil {
		return err
	}
	r.client = c
	return nil
}

// attachments is the cloud's snapshot by node.
func (r *run) attachments() map[cloud.VolumeID][]cloud.NodeName {
	byInst := map[cloud.InstanceID]cloud.NodeName{}
	for _, n := range r.e.NodeNames {
		if in, ok := r.e.Cloud.InstanceOf(n); ok {
			byInst[in] = n
		}
	}
	out := map[cloud.VolumeID][]cloud.NodeName{}
	for v, insts := range r.e.Cloud.Attachments() {
		for _, in := range insts {
			out[v] = append(out[v], byInst[in])
		}
	}
	return out
}

// stop stops the runtime (API first).
func (r *run) stop() error {
	var errs []error
	if r.client != nil {
		errs = append(errs, r.client.close())
		r.client = nil
	}
	if r.e != nil {
		r.syncsBefore += r.e.Syncs()
		errs = append(errs, r.e.Stop())
		r.e = nil
	}
	return errors.Join(errs...)
}

// cleanup stops everything and removes what the run made on disk: the
// agents' mounts first (bind mounts must be unmounted, never deleted
// through), then the directory.
func (r *run) cleanup() error {
	errs := []error{r.stop()}
	nodes, _ := filepath.Glob(filepath.Join(r.machines, "nodes", "*"))
	if r.mem != nil {
		nodes = nil // nothing is mounted on disk; the tables go with the run
	}
	for _, nd := range nodes {
		l, err := layout.New(nd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m := mount.NewSymlink(l)
		if r.cfg.Mounter == "bind" {
			m = mount.NewBind(l)
		}
		if err := agent.Teardown(nd, m); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		left := r.dir
		if r.machines != r.dir {
			left += " and " + r.machines
		}
		return fmt.Errorf("bench: cleanup (left %s in place): %w", left, err)
	}
	var machines error
	if r.machines != r.dir {
		machines = os.RemoveAll(r.machines)
	}
	return errors.Join(machines, os.RemoveAll(r.dir))
}

// waitFor polls done (cheap: in-memory ground truth) until it holds or ctx
// ends; what explains the failure. Every progressEvery it tells progress
// (if set) what is left.
func waitFor(ctx context.Context, progress io.Writer, done func() (bool, string)) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start, told := time.Now(), time.Now()
	for {
		ok, what := done()
		if ok {
			return nil
		}
		if progress != nil && time.Since(told) >= progressEvery {
			told = time.Now()
			fmt.Fprintf(progress, "bench:   after %s: %s\n", time.Since(start).Round(time.Second), what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done before the phase timeout: %s", what)
		case <-tick.C:
		}
	}
}

// progressEvery: how often a long wait tells what is left.
const progressEvery = 30 * time.Second

// converged waits until the ground truth matches what is wanted.
func (r *run) converged(ctx context.Context) error {
	return waitFor(ctx, r.cfg.Progress, func() (bool, string) {
		ok, _ := r.truth.matches()
		return ok, r.truth.left()
	})
}

func (r *run) describe(v cloud.VolumeID) string { return r.truth.describe(v) }

// profile starts the CPU profile of phase name if asked; stop ends it.
func (r *run) profile(name string) (stop func() error, err error) {
	if r.cfg.CPUProfile == "" || r.cfg.ProfilePhase != name {
		return func() error { return nil }, nil
	}
	f, err := os.Create(r.cfg.CPUProfile)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("bench: cpu profile: %w", err), f.Close())
	}
	return func() error { pprof.StopCPUProfile(); return f.Close() }, nil
}

func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// syscallsPerOp is the average system calls of the mounters' four
// operations in counts.
func syscallsPerOp(counts map[string]mount.OpCalls) map[string]float64 {
	out := map[string]float64{}
	for _, op := range []mount.Op{mount.OpStage, mount.OpPublish, mount.OpUnpublish, mount.OpUnstage} {
		out[op.String()] = counts[op.String()].PerOp()
	}
	return out
}

func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024 // kilobytes on Linux
}

// restWait bounds the wait for rest before the heap is measured (the
// bench's PassivateAfter is 2 s by default, tether up's a minute).
const restWait = 30 * time.Second

// rest waits, outside the phases' timing, until no volume actor is live
// (every settled one passivated) or restWait passed, and returns how many
// still are.
func (r *run) rest(ctx context.Context) int64 {
	if r.cfg.PassivateAfter == 0 {
		return r.e.Ctl().LiveVolumeActors() // nothing passivates
	}
	deadline := time.Now().Add(restWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n := r.e.Ctl().LiveVolumeActors()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
	}
}
