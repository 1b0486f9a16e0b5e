package agent

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
	"github.com/tether/tether/node/reconciler"
)

// Devices turns a device path the controller reported into what the
// mounter stages from on this node (the sim cloud's content directory, a
// loop device, a CSI publish context). It fails unless vol itself is
// attached here at that device: a device path is reused by the next
// volume once one is detached, and a stale status must never mount
// another volume's data.
//
// What Source checked must still hold when the mounter uses it. Where the
// answer could change in between (a loop device released and bound to
// another volume's image), Source holds it until release is called, which
// the agent does once the stage returned. release is never nil; a wrapper
// passes its inner release on.
type Devices interface {
	Source(ctx context.Context, vol cloud.VolumeID, device string) (source string, release func(), err error)
}

// noRelease is the release of a source that holds nothing.
func noRelease() {}

// Config of one node agent.
type Config struct {
	Node    cloud.NodeName
	DataDir string
	// Plugin names the volume plugin in the on-disk layout.
	Plugin         string
	Agent          reconciler.Config
	HeartbeatEvery time.Duration
	Clock          clock.Clock
	Log            logrus.FieldLogger
	// Mounter mounts; nil means mount.Default (bind mounts as root,
	// symlinks otherwise).
	Mounter mount.Mounter
	Devices Devices
	// Controller resolves the controller-side node actor of a node.
	Controller func(cloud.NodeName) *actor.PID
	// InstanceID, if set, is what this node's machine is to the cloud as
	// the agent knows it (a CSI node plugin's node ID), with that plugin's
	// MaxVolumes: every heartbeat tells the controller, which records them
	// in the node status.
	InstanceID cloud.InstanceID
	MaxVolumes int64
	Events     *events.Recorder
	// Guard serialises spawns of named actors against sends: share the
	// controller's (nil: the agent makes its own).
	Guard *spawn.Guard
	// OpTimeout bounds one mount operation (on Clock; 0: no bound): past
	// it the operation fails and its volume backs off, though the volume
	// is left alone until the call returns. It also bounds, in real time,
	// the wait for each mount's state in the disk scan at start.
	OpTimeout time.Duration
	// StopGrace: how long Stop waits, in real time, for mount calls still
	// running; a call that hangs longer is left running (and tracked).
	StopGrace time.Duration
	// Calls tracks the mount calls running. Share one between successive
	// agents of a node in one process (never between nodes) so that a new
	// agent leaves alone the volumes a hung call of its predecessor still
	// holds (nil: each Start makes its own, shared by that agent's
	// incarnations).
	Calls *Calls
	// Middleware wraps the agent actor's Receive (metrics, message
	// counts; chaos records there each node status delivered).
	Middleware []actor.ReceiverMiddleware
	// OnCall, if set, is told of each mount call as the agent starts it:
	// in its Receive, before the call runs, so that a recording point
	// knows what the agent had received when it acted (chaos judges I3
	// so). It must not block.
	OnCall func(n cloud.NodeName, vol cloud.VolumeID, r reconciler.Running)
	// Dispatcher, if set, runs the agent's mailbox (nil: Proto.Actor's
	// default; see package actors/runtime/dispatch).
	Dispatcher actor.Dispatcher
	// Mailbox, if set, makes the agent's mailbox (nil: Proto.Actor's
	// default; see dispatch.Mailbox).
	Mailbox actor.MailboxProducer
}

// DefaultConfig: Kubernetes' timings (OpTimeout as the kubelet's CSI
// calls); the plugin is the sim cloud's.
func DefaultConfig() Config {
	return Config{Plugin: "tether-sim", Agent: reconciler.DefaultConfig(), HeartbeatEvery: 10 * time.Second,
		Clock: clock.Real(), Log: logrus.StandardLogger(), OpTimeout: 2 * time.Minute, StopGrace: 5 * time.Second}
}

// resyncEvery: every this many heartbeats the agent asks for its desired
// state again.
const resyncEvery = 6

// agentActor is the shell. Its state is rebuilt on every start from the disk
// and from the controller. Receive never waits for a mount call or the
// disk: both run in goroutines and report back as messages.
type agentActor struct {
	cfg *Config
	// r is this incarnation's shell logic (runner.go), made at every
	// start.
	r       *Runner
	layout  layout.Layout
	mounter mount.Mounter
	self    *actor.PID
	sys     *actor.ActorSystem
	wake    clock.Timer
	beat    *beater
	// beatQueued: a beat's Heartbeat to self waits in the mailbox.
	beatQueued atomic.Bool
	ctx        context.Context
	cancel     context.CancelFunc
}

// scanned is the disk scan's result, sent by the scan's goroutine to the
// incarnation that started it (by).
type scanned struct {
	by    *agentActor
	found mount.Found
	err   error
}

func (a *agentActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.onStarted(ctx)
	case *actor.Restarting, *actor.Stopping:
		a.shutdown()
	case *messages.Crash:
		panic("agent " + string(a.cfg.Node) + ": crash requested: " + m.Reason)
	case *messages.GetAgentStatus:
		ctx.Respond(a.status())
	case *messages.NodeWorkloads, *messages.NodeStatusUpdated, *messages.MountFinished:
		a.r.Handle(m)
	case scanned:
		a.onScanned(ctx, m)
	case *messages.Wake:
		a.wake = nil
		a.r.Handle(m)
	case *messages.Heartbeat:
		a.beatQueued.Store(false)
		a.r.Heartbeat()
	}
}

func (a *agentActor) onStarted(ctx actor.Context) {
	a.self, a.sys = ctx.Self(), ctx.ActorSystem()
	a.ctx, a.cancel = context.WithCancel(context.Background())
	l, err := layout.New(a.cfg.DataDir)
	if err != nil {
		panic(fmt.Sprintf("agent %s: %v", a.cfg.Node, err))
	}
	a.layout = l
	a.mounter = a.cfg.Mounter
	if a.mounter == nil {
		a.mounter = mount.Default(l)
	}
	// Reports and operations are numbered from this incarnation's epoch
	// (kept on disk, one more at every start): numbers of an earlier
	// incarnation, still queued somewhere, never match, and the controller
	// can tell a late copy of an older report from a newer one.
	epoch, err := nextEpoch(l)
	if err != nil {
		panic(fmt.Sprintf("agent %s: %v", a.cfg.Node, err))
	}
	core := a.cfg.Agent
	core.OpTimeout = a.cfg.OpTimeout
	c := a.cfg
	a.r = NewRunner(RunnerConfig{Node: c.Node, Host: agentShell{a}, Mounts: diskMounts{layout: l, mounter: a.mounter, devices: c.Devices, plugin: c.Plugin},
		Calls: c.Calls, Core: reconciler.New(core, epoch<<32), InstanceID: c.InstanceID, MaxVolumes: c.MaxVolumes,
		OpTimeout: c.OpTimeout, Epoch: epoch, Context: a.ctx, OnCall: c.OnCall})
	self, g := a.self, a.cfg.Guard
	a.startScan()
	a.r.Heartbeat() // says hello: the node actor answers with our state
	// From now on the beat runs off the mailbox (heartbeat.go); each beat
	// also asks the mailbox for the rest of onHeartbeat.
	// At most one of those waits in the mailbox: a busy agent does not
	// pile them up.
	node, ctl, queued := a.cfg.Node, a.cfg.Controller, &a.beatQueued
	beat := a.r.HeartbeatMsg()
	a.beat = &beater{}
	a.beat.start(a.cfg.Clock, a.cfg.HeartbeatEvery, func() {
		g.SendFrom(ctl(node), beat, self)
		if queued.CompareAndSwap(false, true) {
			g.Send(self, &messages.Heartbeat{})
		}
	})
}

// shutdown never waits for mount calls: they stay in Calls, and the next
// incarnation takes them over.
func (a *agentActor) shutdown() {
	if a.wake != nil {
		a.wake.Stop()
	}
	if a.beat != nil {
		a.beat.stop()
	}
	if a.cancel != nil {
		a.cancel()
	}
	if a.r != nil {
		a.r.Detach()
	}
}

// Agent is a running node agent.
type Agent struct {
	sys *actor.ActorSystem
	pid *actor.PID
	cfg *Config
}

// AgentName is the agent's name in the actor system: controllers find it
// by the node's name.
func AgentName(node cloud.NodeName) string { return "agent/" + string(node) }

// Start validates the configuration and spawns the agent of cfg.Node under
// guardian (the supervisor strategy that restarts it when it fails).
func Start(sys *actor.ActorSystem, cfg Config, guardian actor.SupervisorStrategy) (*Agent, error) {
	if err := layout.ValidName(layout.KindNode, string(cfg.Node)); err != nil {
		return nil, err
	}
	if _, err := layout.New(cfg.DataDir); err != nil {
		return nil, err
	}
	if cfg.Devices == nil || cfg.Controller == nil {
		return nil, fmt.Errorf("node agent %s: Devices and Controller are required", cfg.Node)
	}
	c := cfg
	if c.Guard == nil {
		c.Guard = spawn.New(sys)
	}
	if c.Calls == nil {
		c.Calls = NewCalls()
	}
	opts := []actor.PropsOption{actor.WithGuardian(guardian), actor.WithReceiverMiddleware(c.Middleware...)}
	if c.Dispatcher != nil {
		opts = append(opts, actor.WithDispatcher(c.Dispatcher))
	}
	if c.Mailbox != nil {
		opts = append(opts, actor.WithMailbox(c.Mailbox))
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &agentActor{cfg: &c} }, opts...)
	pid, err := c.Guard.Spawn(props, AgentName(cfg.Node))
	if err != nil {
		return nil, fmt.Errorf("node agent %s: %w", cfg.Node, err)
	}
	return &Agent{sys: sys, pid: pid, cfg: &c}, nil
}

// PID of the agent (it keeps its PID across restarts).
func (a *Agent) PID() *actor.PID { return a.pid }

// Stop stops the agent, then waits up to StopGrace for its mount calls
// still running; one that hangs longer is logged and left running (Calls
// tracks it; it ends when its syscall returns). It leaves the mounts in
// place: a node agent that stops does not unmount what workloads use.
func (a *Agent) Stop() error {
	err := a.sys.Root.StopFuture(a.pid).Wait()
	if n := a.cfg.Calls.wait(a.cfg.StopGrace); n > 0 {
		a.cfg.Log.WithField("node", a.cfg.Node).Warnf("stopped with %d mount calls still running after %s: left to finish", n, a.cfg.StopGrace)
	}
	return err
}

// Beat sends the agent's heartbeat now, as its beat does, off its mailbox:
// for a controller whose node actor may just have moved to another member
// (a topology change), which learns where the agent listens from the
// heartbeat's sender and then tells it everything, instead of waiting up
// to a heartbeat period.
func (a *Agent) Beat() {
	c := a.cfg
	c.Guard.SendFrom(c.Controller(c.Node), &messages.Heartbeat{Node: string(c.Node), InstanceId: string(c.InstanceID), MaxVolumes: c.MaxVolumes}, a.pid)
}

// Status asks the agent for its state.
func (a *Agent) Status(timeout time.Duration) (*messages.AgentStatus, error) {
	res, err := a.cfg.Guard.Request(a.pid, &messages.GetAgentStatus{}, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("node agent %s: status: %w", a.cfg.Node, err)
	}
	return res.(*messages.AgentStatus), nil
}
