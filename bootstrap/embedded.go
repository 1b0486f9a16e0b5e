package bootstrap

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/slogrus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// Config of an embedded tether: one process with the sim cloud, the
// controller and its store.
type Config struct {
	LogLevel  string // debug, info, warn, error
	LogFormat string // text or json
	LogOutput io.Writer
	// Nodes is how many nodes (n1..nN) to create, each backed by a sim
	// instance.
	Nodes      int
	Controller controller.Config
	Sim        sim.Config
}

// DefaultConfig is DESIGN.md's defaults with three nodes.
func DefaultConfig() Config {
	return Config{LogLevel: "info", LogFormat: "text", LogOutput: os.Stderr, Nodes: 3, Controller: controller.DefaultConfig()}
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
	stopBeats  chan struct{}
	beatsDone  chan struct{}
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
	log, err := NewLogger(cfg.LogLevel, cfg.LogFormat, cfg.LogOutput)
	if err != nil {
		return nil, err
	}
	e := &Embedded{
		System: actor.NewActorSystem(actor.WithLoggerFactory(slogrus.LoggerFactory(log))),
		Cloud:  sim.New(cfg.Sim),
		Store:  store.NewMemory(),
		Events: events.NewRecorder(100),
		Log:    log,
	}
	cc := cfg.Controller
	cc.Log, cc.Supervisor.Log = log, log
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
	}
	e.startHeartbeats(cc.Node.NotReadyAfter / 4)
	return e, nil
}

// startHeartbeats keeps the nodes Ready until node agents (which report
// their own heartbeats) run in this process.
func (e *Embedded) startHeartbeats(every time.Duration) {
	e.stopBeats, e.beatsDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(e.beatsDone)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for _, n := range e.NodeNames {
				e.Controller.Heartbeat(n)
			}
			select {
			case <-e.stopBeats:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop stops the actors and the actor system.
func (e *Embedded) Stop() error {
	close(e.stopBeats)
	<-e.beatsDone
	err := e.Controller.Stop(10 * time.Second)
	e.System.Shutdown()
	return err
}
