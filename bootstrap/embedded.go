package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/slogrus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/supervisor"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node"
)

// Config of an embedded tether: one process with the sim cloud, the
// controller and its store.
type Config struct {
	LogLevel  string // debug, info, warn, error
	LogFormat string // text or json
	LogOutput io.Writer
	// Nodes is how many nodes (n1..nN) to create, each backed by a sim
	// instance and served by a node agent.
	Nodes      int
	Controller controller.Config
	Sim        sim.Config
	// DataDir holds everything on disk: the sim cloud's volume content
	// (cloud/) and each node agent's mounts (nodes/<node>/).
	DataDir string
	Agent   node.Config
}

// DefaultConfig is DESIGN.md's defaults with three nodes.
func DefaultConfig() Config {
	return Config{LogLevel: "info", LogFormat: "text", LogOutput: os.Stderr, Nodes: 3, Controller: controller.DefaultConfig(), Agent: node.DefaultConfig()}
}

// Embedded is a running embedded tether.
type Embedded struct {
	System     *actor.ActorSystem
	Cloud      *sim.Cloud
	Store      *store.Memory
	Events     *events.Recorder
	Controller *controller.Controller
	Log        *logrus.Logger
	NodeNames  []cloud.NodeName
	Agents     map[cloud.NodeName]*node.Agent
	cfg        Config
	guardian   actor.SupervisorStrategy
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
	log, err := NewLogger(cfg.LogLevel, cfg.LogFormat, cfg.LogOutput)
	if err != nil {
		return nil, err
	}
	sc := cfg.Sim
	sc.ContentDir = filepath.Join(cfg.DataDir, "cloud")
	e := &Embedded{
		System: actor.NewActorSystem(actor.WithLoggerFactory(slogrus.LoggerFactory(log))),
		Cloud:  sim.New(sc),
		Store:  store.NewMemory(),
		Events: events.NewRecorder(100),
		Log:    log,
		Agents: map[cloud.NodeName]*node.Agent{},
		cfg:    cfg,
	}
	cc := cfg.Controller
	cc.Log, cc.Supervisor.Log = log, log
	e.guardian = supervisor.NewStrategy(cc.Supervisor)
	e.Controller = controller.New(e.System, cc, e.Cloud, e.Store, e.Events)
	if err := e.Controller.Start(); err != nil {
		return nil, err
	}
	for i := 1; i <= cfg.Nodes; i++ {
		n := cloud.NodeName(fmt.Sprintf("n%d", i))
		e.Cloud.AddInstance(n)
		if err := e.Controller.ApplyNode(store.NodeSpec{Name: n}); err != nil {
			return nil, err
		}
		e.NodeNames = append(e.NodeNames, n)
		if err := e.StartAgent(n); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// NodeDir is node n's agent data directory.
func (e *Embedded) NodeDir(n cloud.NodeName) string {
	return filepath.Join(e.cfg.DataDir, "nodes", string(n))
}

// StartAgent starts (or starts again) node n's agent.
func (e *Embedded) StartAgent(n cloud.NodeName) error {
	ac := e.cfg.Agent
	ac.Node, ac.DataDir, ac.Log, ac.Events = n, e.NodeDir(n), e.Log, e.Events
	ac.Devices = node.SimDevices{Cloud: e.Cloud, Node: n}
	ac.Controller = e.Controller.Lookup().Node
	a, err := node.Start(e.System, ac, e.guardian)
	if err != nil {
		return err
	}
	e.Agents[n] = a
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
func (e *Embedded) Stop() error {
	var errs []error
	for n := range e.Agents {
		errs = append(errs, e.StopAgent(n))
	}
	errs = append(errs, e.Controller.Stop(10*time.Second))
	e.System.Shutdown()
	return errors.Join(errs...)
}
