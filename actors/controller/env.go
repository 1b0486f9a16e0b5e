package controller

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/actors/runtime/supervisor"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Config of the controller. Start from DefaultConfig.
type Config struct {
	Volume     volume.Config
	Node       nodestatus.Config
	SyncPeriod time.Duration
	// SyncConcurrency bounds the sync actor's cloud calls in flight.
	SyncConcurrency int
	// CloudTimeout bounds every cloud call.
	CloudTimeout time.Duration
	// CallWorkers bounds the volume actors' attach and detach calls
	// running at once; the others wait their turn in order (callqueue.go).
	// Zero means 1024: well above the cloud limiter's calls in flight (64
	// by default), so the limiter, not this, paces the cloud; with no
	// limiter, 1024 calls of 50 ms each make 20,000 a second. The workers
	// are a fixed cost (~0.5 MB of descriptors), whatever the fleet.
	CallWorkers int
	Supervisor  supervisor.Config
	// Respawn is the delay curve for actors that stopped without being
	// asked to; RespawnQuiet resets it.
	Respawn      backoff.Policy
	RespawnQuiet time.Duration
	// OnRespawn, if set, is called when a stopped actor is scheduled to
	// come back (metrics, tests).
	OnRespawn func(name string, delay time.Duration)
	// RetireAfter: an actor of a deleted volume, idle this long, stops.
	RetireAfter time.Duration
	// PassivateAfter: the actor of a settled volume, idle this long,
	// stops to free its memory and comes back with the next message
	// (passivate.go; local actors only). 0: never.
	PassivateAfter time.Duration
	// RestoreGrace bounds how long after Start node actors wait for the
	// volume actors' restore before they judge heartbeats (liveness.go).
	RestoreGrace time.Duration
	// Observer, if set, hears what metrics need; its methods must not block.
	Observer Observer
	// RegisterNode, if set, registers a node that an agent announces and
	// the desired state does not have yet (as the kubelet registers its
	// node): the wiring gives it an instance where the cloud needs one and
	// applies its Node. It may block; it runs off the node actor.
	RegisterNode func(cloud.NodeName) error
	// Guard serialises spawns of named actors against sends; share one per
	// actor system (nil: the controller makes its own).
	Guard *spawn.Guard
	// Middleware wraps every actor's Receive (metrics, message counts).
	Middleware []actor.ReceiverMiddleware
	// Dispatcher, if set, runs every actor's mailbox (nil: Proto.Actor's
	// default, a new goroutine per run; see package dispatch).
	Dispatcher actor.Dispatcher
	// Mailbox, if set, makes every actor's mailbox (nil: Proto.Actor's
	// default; see dispatch.Mailbox).
	Mailbox actor.MailboxProducer
	Clock   clock.Clock
	Log     logrus.FieldLogger
	// Seed seeds the backoff jitter (0: random).
	Seed uint64
}

// DefaultConfig is DESIGN.md's defaults.
func DefaultConfig() Config {
	vc := volume.DefaultConfig()
	vc.Backoff.Jitter = 0.1
	return Config{
		Volume:          vc,
		Node:            nodestatus.DefaultConfig(),
		SyncPeriod:      time.Minute,
		SyncConcurrency: 4,
		CloudTimeout:    time.Minute,
		Supervisor:      supervisor.DefaultConfig(),
		Respawn:         backoff.Policy{Initial: 500 * time.Millisecond, Factor: 2, Max: 2 * time.Minute},
		RespawnQuiet:    5 * time.Minute,
		RetireAfter:     30 * time.Second,
		PassivateAfter:  time.Minute,
		RestoreGrace:    5 * time.Minute,
		Clock:           clock.Real(),
		Log:             logrus.StandardLogger(),
	}
}

// env is what every actor of one controller shares. Nothing in it is
// mutable actor state: the cloud, the store and the recorder are safe for
// concurrent use.
type env struct {
	sys   *actor.ActorSystem
	cfg   Config
	cloud cloud.Provider
	// listing is how far the cloud's answers about attachments may be
	// believed (cloud.ListingOf): with ListingNone nothing is verified
	// (the sync actor and the verifier ask nothing), with
	// ListingMayOverstate an attachment the cloud lists and the node
	// statuses do not is reported, never acted on.
	listing cloud.Listing
	store   store.Store
	events  *events.Recorder
	lookup  *localLookup
	guard   *spawn.Guard
	inst    *instances
	verify  *verifier
	log     logrus.FieldLogger
	clock   clock.Clock
	ctx     context.Context // cancelled when the controller stops
	// calls runs the volume actors' attach and detach calls.
	calls *callQueue
	// volumeCfg is the volume machines' configuration, shared by every
	// volume unless Config.Seed gives each its own random source.
	volumeCfg volume.Config
	// started: unix nanoseconds (on clock) when the restore of Start
	// finished, 0 before; restore tracks it (liveness.go).
	started atomic.Int64
	// liveVolumes counts the volume actors started and not stopped.
	liveVolumes atomic.Int64
	restore     restoreWatch
	// cluster is set in distributed mode (cluster.go); agents then holds
	// where each node's agent listens.
	cluster *cluster.Cluster
	// pidSub follows what evicts the lookup's cached activations
	// (cluster.go, pidcache.go).
	pidSub  *eventstream.Subscription
	agents  agentRegistry
	resync  resyncState
	changed changedState
	// desiredFromStore: see Controller.DesiredFromStore.
	desiredFromStore atomic.Bool
	// tells counts the goroutines of Controller.tell (distributed mode).
	tells sync.WaitGroup
}

var wake = &messages.Wake{}

// Observer hears about the controller's work, for metrics. Methods are
// called from actors and must return at once.
type Observer interface {
	// VolumeStates adjusts the count of attachments per state.
	VolumeStates(delta map[string]int)
	// BackoffWait: an operation (attach, detach) failed and waits d.
	BackoffWait(op string, d time.Duration)
	// SyncPass: a verification pass took d, with that many cloud calls
	// and failed calls.
	SyncPass(d time.Duration, calls, errors int)
	// ActorRestart: an actor of that kind was restarted or respawned.
	ActorRestart(kind string)
}

func (e *env) record(obj events.Ref, typ, node string, warning bool, msg string) {
	e.events.Record(events.Event{Time: e.clock.Now(), Object: obj, Type: typ, Node: node, Warning: warning, Message: msg})
	f := e.log.WithFields(logrus.Fields{string(obj.Kind): obj.Name, "event": typ})
	if node != "" {
		f = f.WithField("node", node)
	}
	if warning {
		f.Warn(msg)
	} else {
		f.Info(msg)
	}
}

func newRand(seed uint64) func() float64 {
	if seed == 0 {
		return rand.Float64
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return r.Float64 // used from one goroutine per actor: each actor gets its own
}

// timer keeps at most one pending Wake for an actor: the earliest asked for.
type timer struct {
	t  clock.Timer
	at time.Time
}

func (tm *timer) wakeAt(e *env, self *actor.PID, at time.Time) {
	now := e.clock.Now()
	if tm.t != nil && !tm.at.After(at) && tm.at.After(now) {
		return // a pending timer fires first; the Tick it brings asks again
	}
	if tm.t != nil {
		tm.t.Stop()
	}
	tm.at = at
	tm.t = clock.At(e.clock, at, func() { e.guard.Send(self, wake) })
}

// fired forgets the timer once its Wake arrived.
func (tm *timer) fired(now time.Time) {
	if tm.t != nil && !now.Before(tm.at) {
		tm.t = nil
	}
}

func (tm *timer) stop() {
	if tm.t != nil {
		tm.t.Stop()
		tm.t = nil
	}
}

// incarnationBase returns a random number with its low 32 bits clear: an
// actor incarnation numbers its operations from it, so that results meant
// for an earlier incarnation (still queued in the mailbox, which survives
// a restart) never match. Random, not time-derived: incarnations started
// within the same few seconds must differ too.
func incarnationBase() uint64 { return rand.Uint64() &^ 0xffffffff }
