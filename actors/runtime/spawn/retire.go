package spawn

import (
	"errors"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Retiring on purpose without losing a message.
//
// An actor that stops itself (to free its memory once idle: passivation)
// races with its senders. A sender that resolved the name while the
// actor lived posts to a mailbox that is never read again: Proto.Actor
// drops what a stopped actor's mailbox still holds, without a dead
// letter. Retire closes that race. From the moment the actor calls it,
// every Send, SendFrom or Request to its name is held, not posted; the
// actor hands back what its mailbox still held (HoldEarly) instead of
// acting on it; and once it has stopped (Proto.Actor has removed the name
// from its registry), Release spawns the next actor of that name, if any
// message was held, and posts the held messages to it, the mailbox's
// first, before any other send can reach it. Each sender's messages keep
// their order (those in the mailbox were sent before the Retire, those
// held at the send after it), and a request's future is answered by the
// next actor.

// held is what senders sent to a retiring actor.
type held struct {
	mu    sync.Mutex
	early []Held // handed back from the mailbox by the retiring actor
	late  []Held // held at the send
}

// Held is one message held for the next actor of a name, with the PID
// its answer goes to (nil: none).
type Held struct {
	Msg    any
	Sender *actor.PID
}

// local reports whether pid names an actor of this system.
func (g *Guard) local(pid *actor.PID) bool {
	return pid.Address == g.sys.Address() || pid.Address == "nonhost"
}

// retiring reports whether pid's actor is retiring; the caller holds the
// shard's read lock.
func (s *shard) retiring(g *Guard, pid *actor.PID) bool {
	return len(s.held) > 0 && g.local(pid) && s.held[pid.Id] != nil
}

// hold keeps msg for the next actor of a retiring pid; the caller holds
// the shard's read lock.
func (s *shard) hold(g *Guard, pid *actor.PID, msg any, sender *actor.PID) {
	h := s.held[pid.Id]
	h.mu.Lock()
	h.late = append(h.late, Held{Msg: msg, Sender: sender})
	h.mu.Unlock()
}

// Dormancy tells the guard which names have no actor on purpose but must
// get one back at the next message: a name whose actor retired with
// nothing held (Release) is dormant until Revive spawns it again. A send
// to a dormant name that finds no actor registered calls Revive, outside
// the guard's lock, and then sends: the message reaches the new actor,
// never a dead letter.
type Dormancy interface {
	// Dormant reports whether name is dormant. It is called on every
	// send to a local name while no actor is registered for it: make it
	// cheap (a sync.Map).
	Dormant(name string) bool
	// Dormancy starts: called by Release, under name's lock.
	Sleep(name string)
	// Revive spawns name's actor (through Spawn) if none is registered.
	Revive(name string)
}

type dormancy struct{ d Dormancy }

// SetDormancy sets the dormancy the guard consults (the latest set wins:
// a controller started again on the same actor system replaces its
// predecessor's).
func (g *Guard) SetDormancy(d Dormancy) { g.dorm.Store(&dormancy{d}) }

// dormant: pid names a dormant local name with no actor registered.
func (g *Guard) dormant(pid *actor.PID) bool {
	dm := g.dorm.Load()
	if dm == nil || !g.local(pid) || !dm.d.Dormant(pid.Id) {
		return false
	}
	_, ok := g.sys.ProcessRegistry.GetLocal(pid.Id)
	return !ok
}

// Retire marks the local actor name as stopping on purpose: from now on
// messages to it are held (see above). The actor calls it from its own
// Receive, then stops itself with Poison, handing back every message its
// mailbox still delivers (HoldEarly), and calls Release once stopped.
func (g *Guard) Retire(name string) {
	s := g.lock(name)
	s.Lock()
	defer s.Unlock()
	if s.held == nil {
		s.held = map[string]*held{}
	}
	if s.held[name] == nil {
		s.held[name] = &held{}
	}
}

// HeldNames lists the names retiring now (tests).
func (g *Guard) HeldNames() []string {
	var out []string
	for i := range g.shards {
		s := &g.shards[i]
		s.RLock()
		for n := range s.held {
			out = append(out, n)
		}
		s.RUnlock()
	}
	return out
}

// Retiring reports whether name is retiring (tests).
func (g *Guard) Retiring(name string) bool {
	s := g.lock(name)
	s.RLock()
	defer s.RUnlock()
	return s.held[name] != nil
}

// HoldEarly is how a retiring actor hands back a message its mailbox
// delivered after its Retire: it goes to the next actor before the
// messages held at their send.
func (g *Guard) HoldEarly(name string, msg any, sender *actor.PID) {
	s := g.lock(name)
	s.RLock()
	defer s.RUnlock()
	h := s.held[name]
	if h == nil {
		return // not retiring: Release already ran (never, if used as above)
	}
	h.mu.Lock()
	h.early = append(h.early, Held{Msg: msg, Sender: sender})
	h.mu.Unlock()
}

// Release ends name's retirement once its actor has stopped (its Stopped:
// Proto.Actor has removed the name from its registry). If messages were
// held, spawn (called with the shard locked: it must spawn, not send)
// makes the next actor and they are posted to it, in order, before any
// other sender's; if none was, the name becomes dormant (Dormancy.Sleep);
// with spawn nil (shutting down) they are dropped. It returns how many
// were held.
func (g *Guard) Release(name string, spawn func() (*actor.PID, error)) (int, error) {
	s := g.lock(name)
	s.Lock()
	defer s.Unlock()
	h := s.held[name]
	if h == nil {
		return 0, nil
	}
	delete(s.held, name)
	h.mu.Lock()
	msgs := append(h.early, h.late...)
	h.mu.Unlock()
	if spawn == nil {
		return len(msgs), nil
	}
	if len(msgs) == 0 {
		if dm := g.dorm.Load(); dm != nil {
			dm.d.Sleep(name) // before the lock is released: a send sees held or dormant
		}
		return 0, nil
	}
	pid, err := spawn()
	if errors.Is(err, actor.ErrNameExists) {
		// A sender's lookup found the name free (the old actor's
		// registration is gone before its Stopped runs) and spawned the
		// next actor itself. It has received nothing yet: every send was
		// held. The held messages go to it, first.
		pid, err = actor.NewPID(g.sys.Address(), name), nil
	}
	if err != nil {
		return len(msgs), err
	}
	for _, m := range msgs {
		if m.Sender != nil {
			g.sys.Root.RequestWithCustomSender(pid, m.Msg, m.Sender)
		} else {
			g.sys.Root.Send(pid, m.Msg)
		}
	}
	return len(msgs), nil
}

// SpawnLocked is Spawn for Release's spawn function, whose shard is
// locked already.
func (g *Guard) SpawnLocked(props *actor.Props, name string) (*actor.PID, error) {
	return g.sys.Root.SpawnNamed(props, name)
}
