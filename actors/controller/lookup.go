package controller

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/parallel"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/cloud"
)

// Lookup resolves identities to live actors. Callers look up at every send
// and never keep a PID: a PID may die at any moment, the identity does not.
// Embedded mode spawns a local actor on first use; distributed mode will
// resolve through the cluster.
type Lookup interface {
	Volume(id cloud.VolumeID) *actor.PID
	Node(name cloud.NodeName) *actor.PID
	Sync() *actor.PID
	// Agent resolves a node agent. Agents run beside their node and are
	// never spawned by the controller: an agent that is down simply misses
	// messages, and asks for its state again when it starts.
	Agent(name cloud.NodeName) *actor.PID
}

// Actor names in the local process registry.
const (
	volumePrefix = "volume/"
	nodePrefix   = "node/"
	syncName     = "sync"
	// AgentPrefix names node agents: "agent/<node>".
	AgentPrefix = "agent/"
)

// localLookup spawns named actors from the root context on first use. Their
// guardian is our supervisor strategy, so a panicking actor is restarted
// with exponential backoff. An actor that stops without being asked to
// (chaos, a Stop from outside) is spawned again after a growing delay, if it
// is still wanted.
type localLookup struct {
	sys     *actor.ActorSystem
	clock   clock.Clock
	respawn backoff.Policy
	quiet   time.Duration
	props   func(name string) *actor.Props
	// wanted says whether an actor must exist; desiredOnly asks the
	// desired state alone (not what node statuses still list).
	wanted func(name string, desiredOnly bool) bool
	// onRespawn is Config.OnRespawn.
	onRespawn func(name string, delay time.Duration)
	observer  Observer
	mu        sync.Mutex
	guard     *spawn.Guard
	closing   bool
	retiring  map[string]bool
	passive   map[string]bool // passivating (passivate)
	dormant   sync.Map        // name -> true: passivated, nothing held (spawn.Dormancy)
	deaths    map[string]*death
	timers    map[string]clock.Timer
	spawned   map[string]bool
	// resolve, if set, resolves names instead of local spawns: the
	// cluster's virtual actors (cluster.go).
	resolve func(name string) *actor.PID
	// pids caches resolve's answers (cluster.go).
	pids *pidCache
}

type death struct {
	count int
	last  time.Time
}

func (l *localLookup) Volume(id cloud.VolumeID) *actor.PID { return l.get(volumePrefix + string(id)) }
func (l *localLookup) Node(name cloud.NodeName) *actor.PID { return l.get(nodePrefix + string(name)) }

// prefetch resolves, up to resolvers at once, the names of names that
// the cluster has not answered for yet, so that the sends that follow,
// one after the other and in their order, find them cached: a node actor
// telling a hundred volumes of a status first met them one round trip to
// their owners after the other, its mailbox held meanwhile. Local lookups
// spawn on first use: nothing to do.
func (l *localLookup) prefetch(names []string) {
	if l.resolve == nil || l.pids == nil {
		return
	}
	var miss []string
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if pid, _ := l.pids.get(n); pid == nil {
			miss = append(miss, n)
		}
	}
	if len(miss) < 2 {
		return
	}
	parallel.Do(len(miss), resolvers, func(i int) { l.resolve(miss[i]) })
}

func (l *localLookup) Sync() *actor.PID { return l.get(syncName) }
func (l *localLookup) Agent(name cloud.NodeName) *actor.PID {
	return actor.NewPID(l.sys.Address(), AgentPrefix+string(name))
}

// get returns the PID of name, spawning the actor if none is running.
// Spawns go through the guard (see package spawn), as every send does.
func (l *localLookup) get(name string) *actor.PID {
	if l.resolve != nil {
		return l.resolve(name)
	}
	if l.guard.Exists(name) {
		return actor.NewPID(l.sys.Address(), name)
	}
	l.mu.Lock()
	closing := l.closing
	l.mu.Unlock()
	if closing {
		// Shutting down: sends go to dead letters instead of spawning.
		return actor.NewPID(l.sys.Address(), name)
	}
	pid, err := l.guard.Spawn(l.props(name), name)
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		panic("controller: spawn " + name + ": " + err.Error())
	}
	l.dormant.Delete(name)
	l.mu.Lock()
	l.spawned[name] = true
	l.mu.Unlock()
	return pid
}

var _ spawn.Dormancy = (*localLookup)(nil)

// Dormant implements spawn.Dormancy: name's actor passivated and no
// message was held for it.
func (l *localLookup) Dormant(name string) bool {
	_, ok := l.dormant.Load(name)
	return ok
}

// Sleep implements spawn.Dormancy.
func (l *localLookup) Sleep(name string) { l.dormant.Store(name, true) }

// Revive implements spawn.Dormancy: the next message spawns the actor
// again (unless shutting down: get sends to dead letters then).
func (l *localLookup) Revive(name string) { l.get(name) }

// names lists every actor name spawned so far.
func (l *localLookup) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.spawned))
	for n := range l.spawned {
		out = append(out, n)
	}
	return out
}

// retire marks name as stopping on purpose: no respawn.
func (l *localLookup) retire(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retiring[name] = true
}

// passivate marks name as stopping to free its memory (a settled volume:
// passivate.go); false if it may not (a cluster's activations, or
// shutting down). From now on the guard holds every message sent to it
// (spawn.Guard.Retire) for the next actor of that name.
func (l *localLookup) passivate(name string) bool {
	if l.resolve != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.passive[name] = true
	l.guard.Retire(name)
	return true
}

// stopped is called by an actor when it has stopped. Unless it was retired
// or passivated, or the lookup is closing, it is spawned again after a
// growing delay and woken up. A passivated one comes back at once if a
// message was held for it meanwhile, with that message.
func (l *localLookup) stopped(name string) {
	l.mu.Lock()
	if l.passive[name] {
		delete(l.passive, name)
		closing := l.closing
		l.mu.Unlock()
		spawn := func() (*actor.PID, error) { return l.guard.SpawnLocked(l.props(name), name) }
		if closing {
			spawn = nil
		}
		if _, err := l.guard.Release(name, spawn); err != nil {
			panic("controller: spawn " + name + ": " + err.Error())
		}
		return
	}
	defer l.mu.Unlock()
	retired := l.retiring[name]
	delete(l.retiring, name)
	if l.closing {
		return
	}
	if retired {
		// Stopped on purpose once idle; if the desired state wants it
		// again (a message that raced with the stop was dropped), it comes
		// back at once.
		if l.wanted(name, true) {
			go func() { l.guard.Send(l.get(name), wake) }()
		}
		return
	}
	if !l.wanted(name, false) {
		return
	}
	now := l.clock.Now()
	d := l.deaths[name]
	if d == nil || now.Sub(d.last) > l.quiet {
		d = &death{}
		l.deaths[name] = d
	}
	d.count++
	d.last = now
	delay := l.respawn.Delay(d.count, 0)
	if l.onRespawn != nil {
		l.onRespawn(name, delay)
	}
	if l.observer != nil {
		l.observer.ActorRestart(strings.SplitN(name, "/", 2)[0])
	}
	l.timers[name] = l.clock.AfterFunc(delay, func() {
		l.mu.Lock()
		delete(l.timers, name)
		l.mu.Unlock()
		l.guard.Send(l.get(name), wake)
	})
}

// close stops respawning and returns the names of the live actors.
func (l *localLookup) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing = true
	for name, t := range l.timers {
		t.Stop()
		delete(l.timers, name)
	}
}
