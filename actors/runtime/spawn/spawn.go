package spawn

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Guard serialises spawns of named actors against sends to them.
//
// Every spawn of a named actor holds the lock of that name for writing and
// every send, request, stop or poison holds the lock of its target's name
// for reading, so no message can reach a half-built mailbox. The locks are
// sharded by name: the race is between a spawn and a send to the same
// name, and one lock for the whole system made every send of a fleet wait
// behind every spawn.
type Guard struct {
	sys    *actor.ActorSystem
	shards [shards]shard
	dorm   atomic.Pointer[dormancy] // SetDormancy; a new controller sets its own while sends go on
}

// shard is the lock of the names that hash to it, with the messages held
// for those of them that are stopping on purpose (Retire).
type shard struct {
	sync.RWMutex
	// held is written under the write lock only; each entry's lists
	// under its own mutex (senders hold the read lock).
	held map[string]*held
}

// shards is how many locks a Guard has.
const shards = 64

// lock returns the shard of the actor named id (a PID's Id: the name a root
// spawn gave it).
func (g *Guard) lock(id string) *shard {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return &g.shards[h%shards]
}

// New returns the guard for sys.
func New(sys *actor.ActorSystem) *Guard { return &Guard{sys: sys} }

// Spawn spawns a named actor from the root context.
func (g *Guard) Spawn(props *actor.Props, name string) (*actor.PID, error) {
	mu := g.lock(name)
	mu.Lock()
	defer mu.Unlock()
	return g.sys.Root.SpawnNamed(props, name)
}

// Exists reports whether a local actor is registered under name.
func (g *Guard) Exists(name string) bool {
	mu := g.lock(name)
	mu.RLock()
	defer mu.RUnlock()
	_, ok := g.sys.ProcessRegistry.GetLocal(name)
	return ok
}

// Send sends msg to pid (never blocks on the receiver). To a local actor
// that is retiring (Retire) it is held for the next one; to a dormant
// one (SetDormancy) it wakes it first.
func (g *Guard) Send(pid *actor.PID, msg any) {
	g.deliver(pid, msg, nil, func() { g.sys.Root.Send(pid, msg) })
}

// SendFrom sends msg to pid with sender as its sender, so that the
// receiver learns where to answer (across processes, an address). To a
// retiring or dormant local actor it goes as Send's does.
func (g *Guard) SendFrom(pid *actor.PID, msg any, sender *actor.PID) {
	g.deliver(pid, msg, sender, func() { g.sys.Root.RequestWithCustomSender(pid, msg, sender) })
}

// Request sends msg to pid and returns the future of its answer; the wait
// for the answer happens outside the guard. To a retiring local actor the
// request is held, as Send holds, and the future answered by the next one.
func (g *Guard) Request(pid *actor.PID, msg any, timeout time.Duration) *actor.Future {
	var f *actor.Future
	g.deliver(pid, msg, nil,
		func() { f = g.sys.Root.RequestFuture(pid, msg, timeout) },
		func() *actor.PID { f = actor.NewFuture(g.sys, timeout); return f.PID() })
	return f
}

// deliver runs send under pid's lock, unless the actor is retiring (the
// message is held, with sender, or with the PID answer gives, for a
// request) or dormant (woken first, then sent).
func (g *Guard) deliver(pid *actor.PID, msg any, sender *actor.PID, send func(), answer ...func() *actor.PID) {
	for woke := false; ; woke = true {
		s := g.lock(pid.Id)
		s.RLock()
		if s.retiring(g, pid) {
			if len(answer) > 0 {
				sender = answer[0]()
			}
			s.hold(g, pid, msg, sender)
			s.RUnlock()
			return
		}
		if !woke && g.dormant(pid) {
			s.RUnlock()
			g.dorm.Load().d.Revive(pid.Id)
			continue
		}
		send()
		s.RUnlock()
		return
	}
}

// Stop stops pid at once (a system message: queued messages are skipped).
func (g *Guard) Stop(pid *actor.PID) {
	mu := g.lock(pid.Id)
	mu.RLock()
	defer mu.RUnlock()
	g.sys.Root.Stop(pid)
}

// StopFuture stops pid and returns the future of its end; the wait happens
// outside the guard.
func (g *Guard) StopFuture(pid *actor.PID) *actor.Future {
	mu := g.lock(pid.Id)
	mu.RLock()
	defer mu.RUnlock()
	return g.sys.Root.StopFuture(pid)
}

// Poison stops pid after the messages already queued.
func (g *Guard) Poison(pid *actor.PID) {
	mu := g.lock(pid.Id)
	mu.RLock()
	defer mu.RUnlock()
	g.sys.Root.Poison(pid)
}
