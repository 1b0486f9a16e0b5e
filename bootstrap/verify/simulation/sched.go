package simulation

import (
	"container/heap"
	"fmt"
	"strings"
	"time"

	"github.com/tether/tether/cloud"
)

// event is something that happens at a virtual time; events at the same
// time happen in the order they were scheduled.
type event struct {
	at  time.Time
	seq uint64
	fn  func()
}

type queue []*event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// at schedules fn at t (never before now).
func (w *world) at(t time.Time, fn func()) {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	heap.Push(&w.q, &event{at: t, seq: w.seq, fn: fn})
}

func (w *world) after(d time.Duration, fn func()) { w.at(w.now.Add(d), fn) }

// kind of a simulated actor.
type kind uint8

const (
	kVolume kind = iota
	kNode
	kAgent
	kSync
	kDesired // the desired-state writer (the controller's API)
	kCloud   // results of cloud calls (for the trace)
	kDisk    // results of mount operations (for the trace)
)

var kindPrefix = [...]string{"vol/", "node/", "agent/", "sync", "api", "cloud", "disk/"}

// addr is an actor's identity: it outlives every incarnation.
type addr struct {
	k    kind
	name string
}

func (a addr) String() string { return kindPrefix[a.k] + a.name }

func volAddr(v cloud.VolumeID) addr   { return addr{kVolume, string(v)} }
func nodeAddr(n cloud.NodeName) addr  { return addr{kNode, string(n)} }
func agentAddr(n cloud.NodeName) addr { return addr{kAgent, string(n)} }

var (
	syncAddr    = addr{k: kSync}
	desiredAddr = addr{k: kDesired}
	cloudAddr   = addr{k: kCloud}
)

// actorSim is one simulated actor: a shell around a core, with the
// incarnation that is alive (if any).
type actorSim interface {
	incarnation() uint64
	isAlive() bool
	receive(from addr, msg any)
}

type pair struct{ from, to addr }

// send is an in-process send: FIFO per (from, to) pair, lost if the
// receiver's incarnation changes (or it is down) before it arrives.
func (w *world) send(from, to addr, msg any) {
	at := w.now.Add(w.plan.pairSite("send", from, to).uniform(0, 5*time.Millisecond))
	key := pair{from, to}
	if last := w.fifo[key]; at.Before(last) {
		at = last
	}
	w.fifo[key] = at
	w.post(at, from, to, msg)
}

// post delivers msg at t to the incarnation of to that is alive now.
func (w *world) post(t time.Time, from, to addr, msg any) {
	inc := w.actor(to).incarnation()
	w.at(t, func() { w.deliver(from, to, inc, msg) })
}

func (w *world) deliver(from, to addr, inc uint64, msg any) {
	a := w.actor(to)
	if !a.isAlive() || a.incarnation() != inc {
		if w.tracing {
			w.tracef("lost %s -> %s %s (receiver died)", from, to, describe(msg))
		}
		return
	}
	if w.tracing {
		w.tracef("%s <- %s %s", to, from, describe(msg))
	}
	a.receive(from, msg)
}

// sendLink sends over the agent <-> node actor link, which crosses a
// network in distributed mode: independent latencies (it reorders), and
// faults from the plan: drop, duplicate, long delay, partition.
func (w *world) sendLink(from, to addr, node cloud.NodeName, msg any) {
	s := w.plan.pairSite("link", from, to)
	lat := [2]time.Duration{s.uniform(time.Millisecond, 30*time.Millisecond), s.uniform(time.Millisecond, 30*time.Millisecond)}
	long := s.uniform(200*time.Millisecond, 5*time.Second)
	drop, dup, delay := w.chance(s, w.cfg.Faults.LinkDrop), w.chance(s, w.cfg.Faults.LinkDup), w.chance(s, w.cfg.Faults.LinkDelay)
	if w.partitioned(node) {
		if w.tracing {
			w.tracef("partition drops %s -> %s %s", from, to, describe(msg))
		}
		return
	}
	if drop {
		w.fault("drop %s -> %s %s", from, to, describe(msg))
		return
	}
	if delay {
		w.fault("delay %s -> %s %s by %s", from, to, describe(msg), long)
		lat[0] += long
	}
	w.post(w.now.Add(lat[0]), from, to, msg)
	if dup {
		w.fault("duplicate %s -> %s %s", from, to, describe(msg))
		w.post(w.now.Add(lat[1]), from, to, msg)
	}
}

// sendResult delivers a cloud call's result to whichever incarnation of to
// is alive when it arrives (a restarted actor keeps its mailbox), unless
// the controller process that sent the call (epoch) has died since: its
// mailboxes died with it. Results travel independently of each other.
func (w *world) sendResult(t time.Time, from, to addr, epoch uint64, msgs ...any) {
	w.at(t, func() {
		a := w.actor(to)
		if !a.isAlive() || epoch != w.ctrlEpoch {
			if w.tracing {
				for _, m := range msgs {
					w.tracef("lost %s -> %s %s (receiver down)", from, to, describe(m))
				}
			}
			return
		}
		inc := a.incarnation()
		for _, m := range msgs {
			if a.incarnation() != inc || !a.isAlive() {
				return
			}
			if w.tracing {
				w.tracef("%s <- %s %s", to, from, describe(m))
			}
			a.receive(from, m)
		}
	})
}

// wakeMsg is a timer's Wake.
type wakeMsg struct{}

// timer mirrors the shells' timer: one pending wake per incarnation,
// replaced only by an earlier one.
type timer struct {
	at      time.Time
	gen     uint64
	pending bool
}

func (w *world) wakeAt(t *timer, to addr, at time.Time) {
	if t.pending && !t.at.After(at) && t.at.After(w.now) {
		return // a pending wake fires first; the Tick it brings asks again
	}
	t.gen++
	t.at, t.pending = at, true
	gen, inc := t.gen, w.actor(to).incarnation()
	w.at(at, func() {
		a := w.actor(to)
		if !a.isAlive() || a.incarnation() != inc || t.gen != gen {
			return
		}
		t.pending = false
		w.tracef("%s <- wake", to)
		a.receive(to, wakeMsg{})
	})
}

func describe(msg any) string {
	s := fmt.Sprintf("%T%+v", msg, msg)
	return strings.TrimPrefix(s, "simulation.")
}

// stop forgets the pending wake.
func (t *timer) stop() {
	t.gen++
	t.pending = false
}
