package distributed

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/actors/runtime/supervisor"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/journal"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/node/agent"
	nodecsi "github.com/tether/tether/node/csinode"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// NodeName is the name of the node an agent serves (cloud.NodeName).
type NodeName = cloud.NodeName

// DefaultAgentConfig is an agent's configuration before flags.
func DefaultAgentConfig() AgentConfig { return AgentConfig{Agent: agent.DefaultConfig()} }

// AgentConfig configures one node agent process.
type AgentConfig struct {
	LogLevel, LogFormat string
	LogOutput           io.Writer
	Node                cloud.NodeName
	// DataDir is the node's own directory (its mounts, its epoch file).
	DataDir string
	// Etcd and Prefix: where the cluster's membership is (the agent is a
	// cluster client: it hosts no actor kind, it only resolves the node
	// actor of its node).
	Etcd    []string
	EtcdTLS EtcdTLS // mutual TLS to etcd (required beyond loopback)
	Prefix  string
	// Events configures the event log the agent writes to (in etcd,
	// beside the controllers' store); zero values are the defaults.
	Events store.EventOptions
	Remote RemoteConfig
	// Cloud: the address of `tether cloud serve`, for the device paths
	// (the sim cloud's "devices" are directories on this machine).
	Cloud    string
	CloudTLS ClientTLS
	// CSINodeSocket, instead of Cloud: the unix socket of the CSI
	// driver's node plugin on this machine. The agent mounts through it
	// (node/csinode), and reports its node ID and max_volumes_per_node
	// (NodeGetInfo) to the controller with every heartbeat. CSIWait
	// bounds the wait for the plugin at start (0: a minute).
	CSINodeSocket string
	CSIWait       time.Duration
	// Mounter: "auto" (bind mounts as root, symlinks otherwise), "bind"
	// or "symlink".
	Mounter string
	Agent   agent.Config
	// Backoff, where set, shortens the retries of mount operations and
	// the agent actor's restarts.
	Backoff Backoff
	// Journal, if set, is the file this agent records its mount
	// operations, device resolutions and restarts into
	// (bootstrap/verify/journal), for tether chaos --distributed.
	Journal string
	// Control, if set, is read for chaos commands (Command) until it
	// ends: kills of the agent actor.
	Control io.Reader
}

// AgentProcess is a running node agent process.
type AgentProcess struct {
	Log     *logrus.Logger
	System  *actor.ActorSystem
	Cluster *cluster.Cluster
	Cloud   *cloudremote.Client
	// CSI is the node plugin (AgentConfig.CSINodeSocket), nil on the
	// sim cloud.
	CSI     *nodecsi.Node
	Agent   *agent.Agent
	journal *journal.Writer
	evlog   *store.EtcdEvents
	evw     *events.Writer
	topoSub *eventstream.Subscription
	stopped bool
}

// StartAgent starts the agent of cfg.Node and connects it to the
// controller cluster. Stop it with Stop; mounts stay.
func StartAgent(cfg AgentConfig) (a *AgentProcess, err error) {
	if cfg.Prefix == "" {
		cfg.Prefix = "/tether/"
	}
	if cfg.LogOutput == nil {
		cfg.LogOutput = os.Stderr
	}
	// The node's name becomes a path: validate it before anything else.
	if err := layout.ValidName(layout.KindNode, string(cfg.Node)); err != nil {
		return nil, fmt.Errorf("agent: --node: %w", err)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("agent: a data directory is required (--data-dir)")
	}
	if len(cfg.Etcd) == 0 {
		return nil, errors.New("agent: --etcd is required")
	}
	if (cfg.Cloud == "") == (cfg.CSINodeSocket == "") {
		return nil, errors.New("agent: give the cloud's address (--cloud) or this machine's CSI node plugin socket (--csi-node-socket), one of them")
	}
	newMounter, err := mounterKind(cfg.Mounter)
	if err != nil {
		return nil, err
	}
	if err := cfg.Remote.check(); err != nil {
		return nil, err
	}
	log, err := process.NewLogger(cfg.LogLevel, cfg.LogFormat, cfg.LogOutput)
	if err != nil {
		return nil, err
	}
	a = &AgentProcess{Log: log}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Stop())
			a = nil
		}
	}()
	if a.journal, err = openJournal(cfg.Journal, "agent of node "+string(cfg.Node)); err != nil {
		return a, err
	}
	var rc *remote.Config
	if a.Cloud, rc, a.System, err = connect("agent", cfg.Cloud, cfg.CloudTLS, cfg.Remote, log); err != nil {
		return a, err
	}
	endpoints, etcdTLS, err := etcdClient(cfg.Etcd, cfg.EtcdTLS)
	if err != nil {
		return a, fmt.Errorf("agent: %w", err)
	}
	a.Cluster, err = newCluster(a.System, endpoints, etcdTLS, cfg.Prefix, rc, nil, DefaultMemberTTL, log, nil)
	if err != nil {
		return a, err
	}
	if err := startCluster(a.Cluster, true); err != nil {
		return a, err
	}
	ac := cfg.Agent
	ac.Node, ac.DataDir, ac.Log = cfg.Node, cfg.DataDir, log
	cfg.Backoff.apply(&ac.Agent.Backoff)
	if ac.Events == nil {
		ac.Events = events.NewRecorder(100)
	}
	// The agent's events go to the controllers' event log, beside their
	// store under Prefix+"store/" (OpenMember's).
	if a.evlog, err = store.OpenEtcdEvents(store.EtcdConfig{Endpoints: endpoints, TLS: etcdTLS, Prefix: cfg.Prefix + "store/"}, cfg.Events); err != nil {
		return a, fmt.Errorf("agent: event log: %w", err)
	}
	a.evw = persistEvents(ac.Events, a.evlog, log)
	guard := spawn.New(a.System)
	ac.Guard = guard
	l, err := layout.New(cfg.DataDir)
	if err != nil {
		return a, err
	}
	if cfg.CSINodeSocket != "" {
		if err := a.useCSI(cfg, &ac, l); err != nil {
			return a, err
		}
	} else {
		ac.Mounter = newMounter(l)
		ac.Devices = agent.SimDevices{Cloud: a.Cloud, Node: cfg.Node}
	}
	if j := a.journal; j != nil {
		ac.Mounter = &journalMounter{Mounter: ac.Mounter, j: j, node: string(cfg.Node)}
		ac.Devices = journalDevices{Devices: ac.Devices, j: j, node: string(cfg.Node)}
	}
	self := a.System.Address()
	cl := a.Cluster
	ac.Controller = func(n cloud.NodeName) *actor.PID {
		if pid := cl.Get(string(n), controller.KindNode); pid != nil {
			return pid
		}
		// No member answered: the message is dropped here, and the next
		// heartbeat tries again.
		return actor.NewPID(self, "unresolved/node/"+string(n))
	}
	scfg := supervisor.DefaultConfig()
	scfg.Log = log
	cfg.Backoff.apply(&scfg.Policy)
	if j := a.journal; j != nil {
		scfg.OnRestart = func(child *actor.PID, _ int, _ time.Duration, _ interface{}) {
			j.Write(journal.Record{Kind: journal.KindRestart, Text: child.Id})
		}
	}
	a.Agent, err = agent.Start(a.System, ac, supervisor.NewStrategy(scfg))
	if err != nil {
		return a, err
	}
	if cfg.Control != nil {
		pid, want := a.Agent.PID(), "agent/"+string(cfg.Node)
		go serveControl(cfg.Control, log, func(c Command) {
			if c.Kill == want {
				kill(guard, pid, c.How)
			}
		})
	}
	a.beatOnTopology()
	log.WithFields(logrus.Fields{"node": cfg.Node, "remote": self}).Info("node agent started")
	return a, nil
}

// beatOnTopology sends the agent's heartbeat at every topology change: its
// node's actor may have moved to another member, which knows nothing of
// this agent until it hears from it (then it sends the agent its state);
// after members restarted, a node's first changes otherwise waited up to
// a heartbeat period. The beat resolves the node actor through the
// cluster (a remote round trip), so it runs on a goroutine of its own,
// one at a time: changes during a beat make one more after it.
func (a *AgentProcess) beatOnTopology() {
	var mu sync.Mutex
	running, again := false, false
	beat := func() {
		for {
			a.Agent.Beat()
			mu.Lock()
			if !again {
				running = false
				mu.Unlock()
				return
			}
			again = false
			mu.Unlock()
		}
	}
	a.topoSub = a.System.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*cluster.ClusterTopology); !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if running {
			again = true
			return
		}
		running = true
		go beat()
	})
}

// mounterKind maps --mounter to a mounter constructor.
func mounterKind(kind string) (func(layout.Layout) mount.Mounter, error) {
	switch kind {
	case "", "auto":
		return mount.Default, nil
	case "bind":
		if os.Geteuid() != 0 {
			return nil, errors.New("agent: --mounter bind needs root (bind mounts)")
		}
		return mount.NewBind, nil
	case "symlink":
		return mount.NewSymlink, nil
	}
	return nil, fmt.Errorf("agent: --mounter %q: want auto, bind or symlink", kind)
}

// Stop stops the agent (mounts stay) and leaves the cluster.
func (a *AgentProcess) Stop() error {
	if a.stopped {
		return nil
	}
	a.stopped = true
	var errs []error
	if a.topoSub != nil {
		a.System.EventStream.Unsubscribe(a.topoSub)
	}
	if a.Agent != nil {
		errs = append(errs, a.Agent.Stop())
	}
	// A client never started gossip: Cluster.Shutdown would crash on it.
	// It registered nothing in etcd either; stopping remote and the actor
	// system is all there is.
	if a.Cluster != nil && a.Cluster.Remote != nil {
		a.Cluster.Remote.Shutdown(false)
	}
	if a.System != nil {
		a.System.Shutdown()
	}
	if a.Cloud != nil {
		errs = append(errs, a.Cloud.Close())
	}
	if a.CSI != nil {
		errs = append(errs, a.CSI.Close())
	}
	closeEvents(a.evw, a.Log)
	if a.evlog != nil {
		errs = append(errs, a.evlog.Close())
	}
	errs = append(errs, a.journal.Close())
	return errors.Join(errs...)
}
