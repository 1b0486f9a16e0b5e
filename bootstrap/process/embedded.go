package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/runtime/dispatch"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/actors/runtime/supervisor"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/limit"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Config of an embedded tether: one process with the cloud (the sim, or
// the loop cloud), the controller and its store.
type Config struct {
	LogLevel  string // debug, info, warn, error
	LogFormat string // text or json
	LogOutput io.Writer
	// Nodes is how many nodes (n1..nN) to create, each backed by a sim
	// instance and served by a node agent.
	Nodes      int
	Controller controller.Config
	// Cloud is CloudSim ("" too) or CloudLoop: the loop cloud under
	// <data>/loop, whose disks are image files attached as real loop
	// devices (root only). With it the agents mount with mount.NewBlock
	// (unless NewMounter says otherwise), resolve devices with
	// agent.LoopDevices and lay their mounts out under LoopPlugin. Or
	// CloudCSI: a CSI driver (account_csi.go), one node (Nodes 1) whose
	// agent mounts through the node plugin (node/csinode.Mounter) under
	// CSIPlugin.
	Cloud string
	// Sim configures the sim cloud; Loop the loop cloud; CSI the driver.
	Sim  sim.Config
	Loop LoopConfig
	CSI  CSIConfig
	// CloudLimit bounds the controller's calls to the cloud on tether's
	// side (rate with burst, calls in flight); zero limits nothing.
	CloudLimit limit.Config
	// WrapProvider, if set, wraps the cloud as the controller calls it,
	// next to the cloud (under the metrics and CloudLimit): chaos puts
	// its faults there on a cloud without fault knobs of its own.
	WrapProvider func(cloud.Provider) cloud.Provider
	// DataDir holds everything on disk: the sim cloud's volume content
	// (cloud/, unless Sim.ContentDir says otherwise) or the loop cloud
	// (loop/, loop-account.json), and each node agent's mounts
	// (nodes/<node>/, unless NodesDir says otherwise).
	DataDir string
	// NodesDir, if set, holds each node agent's directory (<NodesDir>/<node>/)
	// in place of <DataDir>/nodes/: an absolute path other than /, made
	// if missing. On a real fleet every node keeps its mounts on its own
	// disk; tether bench --machines-dir puts the simulated nodes' apart from
	// the store's disk so. The data directory's lock does not cover it.
	NodesDir string
	Agent    agent.Config
	// Durable keeps the desired state and node statuses in
	// <data>/tether.db and the sim cloud's state in <data>/cloud-state.json
	// (the loop cloud's state is always durable), so that a restarted
	// process (even after SIGKILL) loses nothing. A
	// durable Embedded holds the data directory's lock (LockFile) from
	// before it reads anything there until Stop, and refuses to start
	// (ErrUntrusted) on a store it cannot trust (identity.go).
	Durable bool
	// RebuildStore (durable only) moves tether.db aside and rebuilds the
	// desired state from the cloud and the mounts on disk (rebuild.go).
	RebuildStore bool
	// AcceptRollback (durable only) opens a store whose newer meta page is
	// damaged at the older one, losing its last commit (store.ErrRollback,
	// which a start refuses otherwise).
	AcceptRollback bool
	// Metrics, if set, is fed by every part of the process.
	Metrics *metrics.Metrics
	// WrapMounter, if set, wraps each agent's mounter (invariant checks).
	WrapMounter func(cloud.NodeName, mount.Mounter) mount.Mounter
	// NewMounter, if set, makes each node's mounter instead of
	// mount.Default (whose probe makes a bind mount per node as root), or
	// mount.NewBlock with the loop cloud.
	NewMounter func(layout.Layout) mount.Mounter
	// WrapStore, if set, wraps the store (chaos diagnostics).
	WrapStore func(store.Store) store.Store
	// WrapDevices, if set, wraps each agent's device resolution (invariant
	// checks).
	WrapDevices func(cloud.NodeName, agent.Devices) agent.Devices
	// Events configures the event log (TTL, bound per object); zero
	// values are the defaults (1 h, 100).
	Events store.EventOptions
}

// DefaultConfig is DESIGN.md's defaults with three nodes.
func DefaultConfig() Config {
	return Config{LogLevel: "info", LogFormat: "text", LogOutput: os.Stderr, Nodes: 3, Controller: controller.DefaultConfig(), Agent: agent.DefaultConfig()}
}

// Embedded is a running embedded tether.
type Embedded struct {
	System *actor.ActorSystem
	// Account is the cloud, whichever it is.
	Account Account
	// Cloud is the sim cloud when the process runs on it (nil with the
	// loop cloud), for what only the sim has: fault injection, exact call
	// counters, synchronous observers (chaos, bench, the tests).
	Cloud      *sim.Cloud
	Store      store.Store
	Events     *events.Recorder
	Controller *controller.Controller
	Log        *logrus.Logger
	NodeNames  []cloud.NodeName
	Agents     map[cloud.NodeName]*agent.Agent
	cfg        Config
	kind       string // CloudSim, CloudLoop or CloudCSI
	guardian   actor.SupervisorStrategy
	guard      *spawn.Guard
	pool       *dispatch.Pool
	ctlCfg     controller.Config
	provider   cloud.Provider
	mu         sync.Mutex
	mounters   map[cloud.NodeName]mount.Mounter
	calls      map[cloud.NodeName]*agent.Calls // one per node, shared by its successive agents
	lock       *dirLock                        // durable only
	identity   string                          // durable only: the store's identity
	stopped    bool                            // Stop ran
	bolt       *store.Bolt                     // durable only: the store under any WrapStore
	evw        *events.Writer                  // the recorder's writer to the event log
	// Rebuilt is what --rebuild-store found and wrote (nil without it).
	Rebuilt *RebuildReport
}

// NewLogger builds the process logger.
func NewLogger(level, format string, w io.Writer) (*logrus.Logger, error) {
	l := logrus.New()
	lv, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	l.SetLevel(lv)
	switch strings.ToLower(format) {
	case "text", "":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, fmt.Errorf("log format %q: want text or json", format)
	}
	if w != nil {
		l.SetOutput(w)
	}
	return l, nil
}

// StartEmbedded wires and starts everything. Stop it with Stop.
func StartEmbedded(cfg Config) (*Embedded, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("embedded: a data directory is required")
	}
	if err := checkApart("nodes directory", cfg.NodesDir); err != nil {
		return nil, err
	}
	if err := checkApart("sim content directory", cfg.Sim.ContentDir); err != nil {
		return nil, err
	}
	log, err := NewLogger(cfg.LogLevel, cfg.LogFormat, cfg.LogOutput)
	if err != nil {
		return nil, err
	}
	e := &Embedded{Events: events.NewRecorder(100), Log: log, Agents: map[cloud.NodeName]*agent.Agent{}, cfg: cfg, mounters: map[cloud.NodeName]mount.Mounter{}, calls: map[cloud.NodeName]*agent.Calls{}}
	if err := e.open(); err != nil {
		return nil, errors.Join(err, e.closeStore())
	}
	if err := e.start(); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// start starts the actors and the agents on the opened store and cloud.
// leanMailbox makes the mailboxes of the embedded runtime's actors: 100,000
// volume actors at rest each keep an empty mailbox (package dispatch).
var leanMailbox = dispatch.Mailbox()

func (e *Embedded) start() error {
	cfg, log := e.cfg, e.Log
	if cfg.WrapStore != nil {
		e.Store = cfg.WrapStore(e.Store)
	}
	if a, ok := e.Account.(*csiAccount); ok {
		a.useStore(e.Store) // before anything asks it a volume's mode
	}
	opts := []actor.ConfigOption{actor.WithLoggerFactory(slogrus.LoggerFactory(log))}
	if cfg.Metrics != nil {
		opts = append(opts, actor.WithMetricProviders(cfg.Metrics.MeterProvider()))
		e.Events.Subscribe(func(ev events.Event) { cfg.Metrics.Event(ev.Type) })
	}
	e.System = actor.NewActorSystem(opts...)
	// Every mailbox of this process runs on one pool of goroutines whose
	// grown stacks are reused (package dispatch).
	e.pool = dispatch.New(0, 0)
	cc := cfg.Controller
	cc.Dispatcher = e.pool
	if cc.Mailbox == nil {
		cc.Mailbox = leanMailbox // queues that cost nothing while empty
	}
	e.guard = spawn.New(e.System)
	cc.Guard = e.guard
	cc.Log, cc.Supervisor.Log = log, log
	if cfg.Metrics != nil {
		cc.Observer = cfg.Metrics
		cc.Supervisor.OnRestart = func(child *actor.PID, _ int, _ time.Duration, _ interface{}) {
			cfg.Metrics.ActorRestart(actorKind(child.Id))
		}
	}
	e.guardian = supervisor.NewStrategy(cc.Supervisor)
	if err := cfg.CloudLimit.Validate(); err != nil {
		return err
	}
	var p cloud.Provider = e.Account
	if cfg.WrapProvider != nil {
		p = cfg.WrapProvider(p)
	}
	e.ctlCfg, e.provider = cc, limit.Wrap(metrics.InstrumentProvider(p, cfg.Metrics), cfg.CloudLimit)
	if err := e.startEvents(); err != nil {
		return err
	}
	e.Controller = controller.New(e.System, cc, e.provider, e.Store, e.Events)
	if err := e.Controller.Start(); err != nil {
		return err
	}
	// The nodes: instances in one cloud commit, specs in one store
	// transaction (a fleet of 10,000 nodes must not start with 20,000
	// fsyncs), then an agent each.
	// A restart applies only the nodes the store lacks: re-applying the
	// others would change nothing but the store's revision, and with it
	// send every agent its state again and make every node actor read it
	// again when its agent announces itself.
	known, err := e.Store.Nodes()
	if err != nil {
		return err
	}
	have := make(map[cloud.NodeName]bool, len(known))
	for _, n := range known {
		have[n.Name] = true
	}
	var changes []controller.Change
	for i := range cfg.Nodes {
		n := cloud.NodeName(fmt.Sprintf("n%d", i+1))
		e.NodeNames = append(e.NodeNames, n)
		if !have[n] {
			changes = append(changes, controller.Change{Node: &store.NodeSpec{Name: n}})
		}
	}
	if err := e.Account.AddInstances(e.NodeNames); err != nil {
		return err
	}
	if len(changes) > 0 {
		if _, err := e.Controller.ApplyAll(changes); err != nil {
			return err
		}
	}
	for _, n := range e.NodeNames {
		if err := e.StartAgent(n); err != nil {
			return err
		}
	}
	return nil
}

// NodeDir is node n's agent data directory.
func (e *Embedded) NodeDir(n cloud.NodeName) string {
	return filepath.Join(e.nodesDir(), string(n))
}

// nodesDir holds the node agents' directories.
func (e *Embedded) nodesDir() string {
	if e.cfg.NodesDir != "" {
		return e.cfg.NodesDir
	}
	return filepath.Join(e.cfg.DataDir, "nodes")
}

// checkApart checks a directory set apart from the data directory (empty:
// not set apart): absolute, clean, and not the filesystem's root, so that
// the names joined under it stay inside it.
func checkApart(what, dir string) error {
	switch {
	case dir == "":
		return nil
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return fmt.Errorf("embedded: %s %q: want an absolute, clean path", what, dir)
	case dir == string(filepath.Separator):
		return fmt.Errorf("embedded: %s %q: want a directory of its own, not the filesystem's root", what, dir)
	}
	return nil
}

// StartAgent starts (or starts again) node n's agent.
func (e *Embedded) StartAgent(n cloud.NodeName) error {
	ac := e.cfg.Agent
	ac.Node, ac.DataDir, ac.Log, ac.Events = n, e.NodeDir(n), e.Log, e.Events
	if e.identity != "" {
		// The agent's directory belongs to this store from now on.
		if err := writeIdentityFile(ac.DataDir, e.identity); err != nil {
			return fmt.Errorf("node %s: %w", n, err)
		}
	}
	ac.Devices = e.Account.Devices(n)
	ac.Plugin = e.Plugin()
	if e.cfg.WrapDevices != nil {
		ac.Devices = e.cfg.WrapDevices(n, ac.Devices)
	}
	ac.Guard, ac.Dispatcher = e.guard, e.pool
	if ac.Mailbox == nil {
		ac.Mailbox = leanMailbox
	}
	if e.calls[n] == nil {
		e.calls[n] = agent.NewCalls()
	}
	ac.Calls = e.calls[n] // a new agent leaves alone what its predecessor's calls still hold
	if e.cfg.Metrics != nil || e.cfg.WrapMounter != nil || e.cfg.NewMounter != nil || e.kind != CloudSim {
		m, err := e.Mounter(n)
		if err != nil {
			return err
		}
		if e.cfg.Metrics != nil {
			m = mount.Observed(m, e.cfg.Metrics.MountOperation)
		}
		if e.cfg.WrapMounter != nil {
			m = e.cfg.WrapMounter(n, m)
		}
		ac.Mounter = m
	}
	ac.Controller = e.controllerNode
	a, err := agent.Start(e.System, ac, e.guardian)
	if err != nil {
		return err
	}
	e.Agents[n] = a
	return nil
}

// Mounter returns the kind of mounter node n's agent uses by default.
func (e *Embedded) Mounter(n cloud.NodeName) (mount.Mounter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.mounters[n]; ok {
		return m, nil
	}
	l, err := layout.New(e.NodeDir(n))
	if err != nil {
		return nil, err
	}
	newMounter := e.cfg.NewMounter
	switch {
	case newMounter != nil:
	case e.kind == CloudCSI:
		m, err := e.Account.(*csiAccount).mounter(n, l.Root(), e.cfg.Agent.OpTimeout)
		if err != nil {
			return nil, err
		}
		e.mounters[n] = m
		return m, nil
	case e.kind == CloudLoop:
		newMounter = func(l layout.Layout) mount.Mounter { return mount.NewBlock(l) }
	default:
		newMounter = mount.Default
	}
	m := newMounter(l)
	e.mounters[n] = m
	return m, nil
}

// Plugin is the volume plugin in the agents' layout:
// <node>/plugins/<plugin>/mounts/<volume>, <node>/pods/<uid>/volumes/<plugin>/<volume>.
func (e *Embedded) Plugin() string {
	switch e.kind {
	case CloudLoop:
		return LoopPlugin
	case CloudCSI:
		return CSIPlugin
	}
	return e.cfg.Agent.Plugin
}

// Ctl returns the current controller (RestartController replaces it).
func (e *Embedded) Ctl() *controller.Controller {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.Controller
}

// controllerNode resolves a node actor through the current controller (it
// may have been restarted).
func (e *Embedded) controllerNode(n cloud.NodeName) *actor.PID {
	e.mu.Lock()
	ctl := e.Controller
	e.mu.Unlock()
	return ctl.Lookup().Node(n)
}

// RestartController stops the controller's actors and starts a new
// controller on the same store and cloud, as after a crash of the
// controller process: it rebuilds everything from the store, the node
// agents' reports and the cloud.
func (e *Embedded) RestartController() error {
	e.mu.Lock()
	old := e.Controller
	e.mu.Unlock()
	if err := old.Stop(10 * time.Second); err != nil {
		return err
	}
	ctl := controller.New(e.System, e.ctlCfg, e.provider, e.Store, e.Events)
	if err := ctl.Start(); err != nil {
		return err
	}
	e.mu.Lock()
	e.Controller = ctl
	e.mu.Unlock()
	return nil
}

// StopAgent stops node n's agent without unmounting anything (as a crash
// of the agent would).
func (e *Embedded) StopAgent(n cloud.NodeName) error {
	a, ok := e.Agents[n]
	if !ok {
		return fmt.Errorf("no agent for node %q", n)
	}
	delete(e.Agents, n)
	return a.Stop()
}

// Stop stops the agents, the controller and the actor system. Mounts stay.
// A second Stop does nothing.
func (e *Embedded) Stop() error {
	if e.stopped {
		return nil
	}
	e.stopped = true
	var errs []error
	for n := range e.Agents {
		errs = append(errs, e.StopAgent(n))
	}
	if e.Controller != nil {
		errs = append(errs, e.Controller.Stop(10*time.Second))
	}
	if e.System != nil {
		e.System.Shutdown()
	}
	e.stopEvents()
	if e.pool != nil {
		e.pool.Close() // idle workers end now, busy ones after their run
	}
	if e.Account != nil {
		errs = append(errs, e.Account.Close()) // the sim folds its state's log into its snapshot
	}
	errs = append(errs, e.closeStore())
	return errors.Join(errs...)
}

// closeStore closes a durable store and then releases the data directory.
func (e *Embedded) closeStore() error {
	var errs []error
	if e.bolt != nil {
		errs = append(errs, e.bolt.Close())
		e.bolt = nil
	}
	errs = append(errs, e.lock.release())
	return errors.Join(errs...)
}

// logRebuild tells the operator what --rebuild-store did.
func (e *Embedded) logRebuild(path string, rep RebuildReport) {
	f := logrus.Fields{"nodes": rep.Nodes, "volumes": rep.Volumes, "workloads": rep.Workloads}
	if rep.MovedAside != "" {
		f["old_store"] = rep.MovedAside
	}
	e.Log.WithFields(f).Warnf("rebuilt %s from the cloud and the mounts on disk; re-apply your manifests to restore what mounts cannot show (read-only flags, workloads not mounted yet)", path)
	for _, a := range rep.Unclaimed {
		e.Log.Warnf("rebuild: attachment %s has no workload mounting it: nothing wants it, it will be detached", a)
	}
	for _, s := range rep.Skipped {
		e.Log.Warnf("rebuild: skipped %s", s)
	}
}

// actorKind names the kind of a supervised actor from its name, for metrics.
func actorKind(id string) string {
	for _, k := range []string{"volume", "node", "agent", "sync"} {
		if strings.HasPrefix(id, k) {
			return k
		}
	}
	return "other"
}

// Syncs is how many times the durable store and the sim cloud's state have
// synced files to disk since they were opened (0 when not durable).
func (e *Embedded) Syncs() int64 {
	var n int64
	if e.bolt != nil {
		n += e.bolt.Syncs()
	}
	if e.Cloud != nil {
		n += e.Cloud.Fsyncs()
	}
	return n
}
