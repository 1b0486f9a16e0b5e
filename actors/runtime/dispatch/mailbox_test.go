package dispatch

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/cloud/testkit"
)

// ignoreThrottle is the goroutine an actor system's dead letters leave
// behind after Shutdown (as in TestActorsOnPoolKeepOrder).
var ignoreThrottle = goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1")

// --- a mailbox driven by hand, its calls written to one log ---

// trace is the log a script's mailbox, invoker, middleware and dispatcher
// write to, in the order of their calls.
type trace struct{ lines []string }

func (t *trace) add(format string, args ...any) {
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// batch is a MessageBatch.
type batch []any

func (b batch) GetMessages() []any { return b }

// describe names a message in a trace.
func describe(m any) string {
	switch m := m.(type) {
	case *actor.SuspendMailbox:
		return "Suspend"
	case *actor.ResumeMailbox:
		return "Resume"
	case batch:
		return fmt.Sprintf("batch%v", []any(m))
	case *actor.MessageEnvelope:
		return "envelope(" + describe(m.Message) + ")"
	default:
		return fmt.Sprint(m)
	}
}

// handDispatcher keeps the runs it is given until the script runs them.
type handDispatcher struct {
	tr         *trace
	throughput int
	runs       []func()
}

func (d *handDispatcher) Schedule(fn func()) { d.tr.add("schedule"); d.runs = append(d.runs, fn) }
func (d *handDispatcher) Throughput() int    { return d.throughput }

// drain runs the scheduled runs, and those they schedule, until none is
// left.
func (d *handDispatcher) drain() {
	for len(d.runs) > 0 {
		fn := d.runs[0]
		d.runs = d.runs[1:]
		fn()
	}
}

// traceInvoker logs what it is handed. A user message "panic" panics, and
// EscalateFailure suspends the mailbox, as an actor context does. onUser,
// if set, runs on every user message (after it is logged).
type traceInvoker struct {
	tr         *trace
	mb         actor.Mailbox
	onUser     func(any)
	onEscalate func() // instead of suspending
}

func (i *traceInvoker) InvokeSystemMessage(m any) { i.tr.add("system %s", describe(m)) }

func (i *traceInvoker) InvokeUserMessage(m any) {
	i.tr.add("user %s", describe(m))
	if i.onUser != nil {
		i.onUser(m)
	}
	if m == "panic" {
		panic("boom")
	}
}

func (i *traceInvoker) EscalateFailure(reason, m any) {
	i.tr.add("escalate %v %s", reason, describe(m))
	if i.onEscalate != nil {
		i.onEscalate()
		return
	}
	i.mb.PostSystemMessage(&actor.SuspendMailbox{})
}

type traceMiddleware struct{ tr *trace }

func (w traceMiddleware) MailboxStarted()       { w.tr.add("mw started") }
func (w traceMiddleware) MessagePosted(m any)   { w.tr.add("mw posted %s", describe(m)) }
func (w traceMiddleware) MessageReceived(m any) { w.tr.add("mw received %s", describe(m)) }
func (w traceMiddleware) MailboxEmpty()         { w.tr.add("mw empty") }

// handMailbox is a mailbox of produce's, set up as Proto.Actor's spawner
// sets one up, on a handDispatcher.
type handMailbox struct {
	tr  *trace
	d   *handDispatcher
	inv *traceInvoker
	mb  actor.Mailbox
}

func newHandMailbox(throughput int, produce func(actor.MailboxMiddleware) actor.MailboxProducer) *handMailbox {
	tr := &trace{}
	h := &handMailbox{tr: tr, d: &handDispatcher{tr: tr, throughput: throughput}}
	h.mb = produce(traceMiddleware{tr})()
	h.inv = &traceInvoker{tr: tr, mb: h.mb}
	h.mb.RegisterHandlers(h.inv, h.d)
	h.mb.PostSystemMessage("started")
	h.mb.Start()
	return h
}

func (h *handMailbox) user(ms ...any) {
	for _, m := range ms {
		h.mb.PostUserMessage(m)
	}
}

func (h *handMailbox) count() { h.tr.add("count %d", h.mb.UserMessageCount()) }

var producers = []struct {
	name    string
	produce func(actor.MailboxMiddleware) actor.MailboxProducer
}{
	{"unbounded", func(mw actor.MailboxMiddleware) actor.MailboxProducer { return actor.Unbounded(mw) }},
	{"lean", func(mw actor.MailboxMiddleware) actor.MailboxProducer { return Mailbox(Middlewares(mw)) }},
}

// released fails the test unless the lean mailbox holds no queue segment.
func released(t *testing.T, mb actor.Mailbox) {
	t.Helper()
	m := mb.(*mailbox)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.system != (fifo{}) || m.user != (fifo{}) {
		t.Fatalf("an empty mailbox keeps queue memory: system %+v, user %+v", m.system, m.user)
	}
}

// The lean mailbox does what Proto.Actor's default does, call for call:
// each script runs on both and their traces (invocations, middleware
// calls, schedules, counts) must be the same, and what they must be.
func TestMailboxBehavesAsUnbounded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var forty []any       // u0 ... u39
	var fortyGot []string // user u0 ... user u39
	for i := range 40 {
		forty = append(forty, fmt.Sprintf("u%d", i))
		fortyGot = append(fortyGot, fmt.Sprintf("user u%d", i))
	}
	for _, tc := range []struct {
		name       string
		throughput int
		script     func(h *handMailbox)
		want       []string // lines that must appear, in this order
	}{{
		name:       "order kept across yields",
		throughput: 3,
		script:     func(h *handMailbox) { h.user(forty...); h.d.drain() },
		want:       append([]string{"system started"}, fortyGot...),
	}, {
		name:       "system before user",
		throughput: 300,
		script: func(h *handMailbox) {
			h.user("u1", "u2")
			h.mb.PostSystemMessage("s1")
			h.mb.PostSystemMessage("s2")
			h.d.drain()
		},
		want: []string{"system started", "system s1", "system s2", "user u1", "user u2"},
	}, {
		name:       "a system message posted while running comes before the next user message",
		throughput: 300,
		script: func(h *handMailbox) {
			h.inv.onUser = func(m any) {
				if m == "u1" {
					h.mb.PostSystemMessage("s1")
				}
			}
			h.user("u1", "u2")
			h.d.drain()
		},
		want: []string{"user u1", "system s1", "user u2"},
	}, {
		name:       "suspend holds user messages and resume releases them",
		throughput: 300,
		script: func(h *handMailbox) {
			h.d.drain()
			h.mb.PostSystemMessage(&actor.SuspendMailbox{})
			h.d.drain() // suspended, and empty
			h.user("u1")
			h.d.drain()
			h.user("u2")
			h.d.drain()
			h.count()
			h.mb.PostSystemMessage("s1")
			h.d.drain()
			h.mb.PostSystemMessage(&actor.ResumeMailbox{})
			h.d.drain()
			h.count()
		},
		want: []string{"mw received Suspend", "count 2", "system s1", "mw received Resume", "user u1", "user u2", "count 0"},
	}, {
		name:       "batches are posted message by message, then themselves",
		throughput: 300,
		script: func(h *handMailbox) {
			h.user(batch{"a", "b"}, &actor.MessageEnvelope{Message: batch{"c", "d"}}, &actor.MessageEnvelope{Message: "e"})
			h.d.drain()
		},
		want: []string{
			"user a", "user b", "user batch[a b]",
			"user c", "user d", "user envelope(batch[c d])", "user envelope(e)",
		},
	}, {
		name:       "a panic is escalated and the messages after it wait for the resume",
		throughput: 300,
		script: func(h *handMailbox) {
			h.user("u1", "panic", "u2", "u3")
			h.d.drain()
			h.count()
			h.mb.PostSystemMessage(&actor.ResumeMailbox{})
			h.d.drain()
		},
		want: []string{"user u1", "user panic", "escalate boom panic", "mw received Suspend", "count 2", "user u2", "user u3"},
	}, {
		// EscalateFailure runs as the mailbox's run ends, before it goes
		// idle: what it posts finds the mailbox running, and is
		// processed only thanks to the re-check after going idle.
		name:       "posts made as the mailbox goes idle are not lost",
		throughput: 300,
		script: func(h *handMailbox) {
			h.inv.onEscalate = func() {
				h.inv.onEscalate = nil
				h.user("late")
			}
			h.user("panic")
			h.d.drain()
			h.count()
			h.inv.onEscalate = func() {
				h.inv.onEscalate = nil
				h.mb.PostSystemMessage("late")
			}
			h.user("panic")
			h.d.drain()
		},
		want: []string{
			"user panic", "escalate boom panic", "mw posted late", "user late", "mw empty", "count 0",
			"user panic", "escalate boom panic", "mw posted late", "system late", "mw empty",
		},
	}, {
		name:       "an idle mailbox is scheduled again by its next post, once",
		throughput: 300,
		script: func(h *handMailbox) {
			h.d.drain()
			h.user("u1", "u2")
			h.d.drain()
			h.user("u3")
			h.d.drain()
		},
		want: []string{"schedule", "user u1", "user u2", "mw empty", "schedule", "user u3", "mw empty"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			traces := map[string][]string{}
			for _, p := range producers {
				h := newHandMailbox(tc.throughput, p.produce)
				tc.script(h)
				traces[p.name] = h.tr.lines
				if p.name == "lean" {
					if n := h.mb.UserMessageCount(); n == 0 {
						released(t, h.mb)
					}
				}
			}
			if got, want := traces["lean"], traces["unbounded"]; !slices.Equal(got, want) {
				t.Fatalf("lean and unbounded differ:\nlean:      %s\nunbounded: %s", strings.Join(got, "; "), strings.Join(want, "; "))
			}
			// And the trace is the one expected (want is a subsequence).
			got, i := traces["lean"], 0
			for _, l := range got {
				if i < len(tc.want) && l == tc.want[i] {
					i++
				}
			}
			if i < len(tc.want) {
				t.Fatalf("trace lacks %q (in order):\n%s", tc.want[i:], strings.Join(got, "\n"))
			}
		})
	}
}

// A backlog takes segments while it waits and gives all back once drained.
func TestMailboxReleasesQueuesWhenDrained(t *testing.T) {
	h := newHandMailbox(300, producers[1].produce)
	m := h.mb.(*mailbox)
	for i := range 1000 {
		h.mb.PostUserMessage(i)
		h.mb.PostSystemMessage(i)
	}
	segs := 0
	for s := m.user.first; s != nil; s = s.next {
		segs++
	}
	if want := (1000 + segmentLen - 1) / segmentLen; segs != want {
		t.Fatalf("1000 waiting messages in %d segments, want %d", segs, want)
	}
	h.d.drain()
	if n := len(h.tr.lines); n < 2001 {
		t.Fatalf("%d lines traced for 2001 messages", n)
	}
	released(t, h.mb)
	if got := unsafe.Sizeof(mailbox{}); got > 96 {
		t.Errorf("a mailbox is %d bytes, want at most 96", got)
	}
}

// A nil user message is delivered (Proto.Actor's default takes it for an
// empty queue, and its run never ends).
func TestMailboxDeliversNil(t *testing.T) {
	h := newHandMailbox(300, producers[1].produce)
	h.user(nil, "after")
	h.d.drain()
	want := []string{"user <nil>", "mw received <nil>", "user after", "mw received after", "mw empty"}
	if got := h.tr.lines[len(h.tr.lines)-len(want):]; !slices.Equal(got, want) {
		t.Fatalf("trace ends %q, want %q", got, want)
	}
	released(t, h.mb)
}

// --- concurrent posters on a Pool ---

type posted struct{ sender, seq int }

// orderInvoker checks that each sender's messages arrive in the order sent,
// acknowledges each on its sender's channel, and says when all have
// arrived.
type orderInvoker struct {
	next  []int
	acks  []chan struct{}
	total int
	want  int
	bad   error
	done  chan struct{}
}

func (i *orderInvoker) InvokeSystemMessage(any) {}

func (i *orderInvoker) InvokeUserMessage(m any) {
	p := m.(posted)
	if p.seq != i.next[p.sender] && i.bad == nil {
		i.bad = fmt.Errorf("sender %d: message %d arrived when %d was due", p.sender, p.seq, i.next[p.sender])
	}
	i.next[p.sender] = p.seq + 1
	select {
	case i.acks[p.sender] <- struct{}{}:
	default: // the sender does not wait for acknowledgements
	}
	if i.total++; i.total == i.want {
		close(i.done)
	}
}

func (i *orderInvoker) EscalateFailure(reason, _ any) { panic(reason) }

// Many goroutines post at once, while the mailbox goes idle and is
// scheduled again on a Pool: every message arrives, each sender's in
// order, and the counter counts them all. Senders either stream their
// messages or post each once the previous one has arrived; then the
// mailbox goes idle at nearly every message, while others post: a post
// that finds it still running, just before it goes idle, is processed
// only thanks to the re-check after going idle.
func TestMailboxConcurrentPostersLoseNothing(t *testing.T) {
	const posters, each = 8, 10_000
	for _, tc := range []struct {
		throughput int
		pingPong   bool
	}{{1, false}, {7, false}, {300, false}, {300, true}} {
		t.Run(fmt.Sprintf("throughput %d, ping-pong %v", tc.throughput, tc.pingPong), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			p := New(tc.throughput, 0)
			var n atomic.Int64
			mb := Mailbox(CountReceived(&n))()
			inv := &orderInvoker{next: make([]int, posters), acks: make([]chan struct{}, posters), want: posters * each, done: make(chan struct{})}
			for s := range inv.acks {
				inv.acks[s] = make(chan struct{}, 1)
			}
			mb.RegisterHandlers(inv, p)
			mb.Start()
			lost := time.After(30 * time.Second)
			var start, wg sync.WaitGroup
			start.Add(1)
			var stuck atomic.Bool
			for s := range posters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start.Wait()
					for i := range each {
						mb.PostUserMessage(posted{s, i})
						if i%1000 == 0 {
							mb.PostSystemMessage("tick") // system messages interleave
						}
						if tc.pingPong {
							select {
							case <-inv.acks[s]:
							case <-lost:
								stuck.Store(true)
								return
							}
						}
					}
				}()
			}
			start.Done()
			wg.Wait()
			if !stuck.Load() {
				select {
				case <-inv.done:
				case <-lost:
					stuck.Store(true)
				}
			}
			if stuck.Load() {
				t.Fatalf("%d of %d messages waiting after 30s: a wake-up was lost", mb.UserMessageCount(), posters*each)
			}
			p.Close()
			p.Wait() // the mailbox's last run has ended
			if inv.bad != nil {
				t.Fatal(inv.bad)
			}
			if got := n.Load(); got != posters*each {
				t.Fatalf("counted %d, want %d", got, posters*each)
			}
			m := mb.(*mailbox)
			if m.UserMessageCount() != 0 || m.sysMessages.Load() != 0 || m.schedulerStatus.Load() != mailboxIdle {
				t.Fatalf("after the last run: %d user, %d system messages, status %d", m.UserMessageCount(), m.sysMessages.Load(), m.schedulerStatus.Load())
			}
			released(t, mb)
		})
	}
}

// --- real actors ---

// newSystem is an actor system whose actors run as the embedded runtime
// runs them: lean mailboxes on a Pool. Cleanup shuts it down and checks
// that no goroutine is left.
func newSystem(t testing.TB, throughput int, opts ...MailboxOption) (*actor.ActorSystem, []actor.PropsOption) {
	p := New(throughput, 0)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	t.Cleanup(func() {
		sys.Shutdown()
		p.Close()
		p.Wait()
		goleak.VerifyNone(t, goleak.IgnoreCurrent(), ignoreThrottle)
	})
	return sys, []actor.PropsOption{actor.WithMailbox(Mailbox(opts...)), actor.WithDispatcher(p)}
}

type orderActor struct {
	next []int
	got  int
	want int
	done chan error
}

func (a *orderActor) Receive(c actor.Context) {
	p, ok := c.Message().(posted)
	if !ok {
		return
	}
	if p.seq != a.next[p.sender] {
		a.done <- fmt.Errorf("sender %d: message %d arrived when %d was due", p.sender, p.seq, a.next[p.sender])
	}
	a.next[p.sender] = p.seq + 1
	if a.got++; a.got == a.want {
		a.done <- nil
	}
}

// Actors on lean mailboxes get each sender's messages in the order sent.
func TestMailboxActorsKeepOrderPerSender(t *testing.T) {
	var n atomic.Int64
	sys, opts := newSystem(t, 5, CountReceived(&n))
	const actors, senders, each = 10, 4, 2000
	done := make(chan error, actors*2)
	pids := make([]*actor.PID, actors)
	for i := range pids {
		pids[i] = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &orderActor{next: make([]int, senders), want: senders * each, done: done}
		}, opts...))
	}
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				for _, pid := range pids {
					sys.Root.Send(pid, posted{s, i})
				}
			}
		}()
	}
	wg.Wait()
	for range actors {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("not every actor got its messages")
		}
	}
	if got := n.Load(); got != actors*senders*each {
		t.Fatalf("counted %d user messages, want %d", got, actors*senders*each)
	}
}

type fragile struct{ events chan<- string }

func (a fragile) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.events <- "started"
	case *actor.Restarting:
		a.events <- "restarting"
	case string:
		if m == "boom" {
			panic("boom")
		}
		a.events <- m
	}
}

// An actor that panics is restarted by its supervisor and gets the
// messages sent after the one it panicked on, in order.
func TestMailboxPanickingActorIsRestarted(t *testing.T) {
	var n atomic.Int64
	sys, opts := newSystem(t, 0, CountReceived(&n))
	events := make(chan string, 100)
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return fragile{events} }, opts...))
	sent := []string{"a", "boom", "b", "c", "boom", "d"}
	for _, m := range sent {
		sys.Root.Send(pid, m)
	}
	want := []string{"started", "a", "restarting", "started", "b", "c", "restarting", "started", "d"}
	for i, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event %d: %q, want %q", i, got, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %d (%q)", i, w)
		}
	}
	if got := n.Load(); got != int64(len(sent)) {
		t.Fatalf("counted %d user messages, want %d (system messages and Restarting are not)", got, len(sent))
	}
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

// idleActor says when it has started and when it has stopped.
type idleActor struct{ started, stopped *sync.WaitGroup }

func (a idleActor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.started.Done()
	case *actor.Stopped:
		a.stopped.Done()
	}
}

// heapAfterGC is the live heap once garbage (and sync.Pool's caches) are
// collected.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // a sync.Pool's victim cache goes at the second
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Bytes per idle actor (actor context, PID, registry entry and mailbox),
// with Proto.Actor's mailbox and with the lean one.
func TestMailboxBytesPerIdleActor(t *testing.T) {
	const actors = 20_000
	perActor := map[string]float64{}
	for _, name := range []string{"unbounded", "lean"} {
		t.Run(name, func(t *testing.T) {
			p := New(0, 0)
			sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
			produce := actor.Unbounded()
			if name == "lean" {
				produce = Mailbox()
			}
			var started, stopped sync.WaitGroup
			props := actor.PropsFromProducer(func() actor.Actor { return idleActor{&started, &stopped} },
				actor.WithMailbox(produce), actor.WithDispatcher(p))
			pids := make([]*actor.PID, actors)
			started.Add(actors)
			stopped.Add(actors)
			before := heapAfterGC()
			for i := range pids {
				pids[i] = sys.Root.Spawn(props)
			}
			testkit.Wait(t, 30*time.Second, started.Wait, "every actor started")
			after := heapAfterGC()
			perActor[name] = float64(after-before) / actors
			t.Logf("%s: %.0f bytes per idle actor", name, perActor[name])
			for _, pid := range pids {
				sys.Root.Stop(pid)
			}
			testkit.Wait(t, 30*time.Second, stopped.Wait, "every actor stopped")
			sys.Shutdown()
			p.Close()
			p.Wait()
		})
	}
	if !(perActor["lean"] < perActor["unbounded"]) {
		t.Fatalf("an idle actor takes %.0f bytes with the lean mailbox, %.0f with Proto.Actor's", perActor["lean"], perActor["unbounded"])
	}
	t.Logf("the lean mailbox saves %.0f bytes per idle actor", perActor["unbounded"]-perActor["lean"])
}

// --- benchmarks ---

type nopInvoker struct{}

func (nopInvoker) InvokeSystemMessage(any)  {}
func (nopInvoker) InvokeUserMessage(any)    {}
func (nopInvoker) EscalateFailure(any, any) {}

type doneActor struct{ wg *sync.WaitGroup }

func (a doneActor) Receive(c actor.Context) {
	if _, ok := c.Message().(*posted); ok {
		a.wg.Done()
	}
}

// BenchmarkMailbox compares delivery through Proto.Actor's mailbox and the
// lean one; an op is one message.
//
//   - mailbox: the mailbox alone on a synchronous dispatcher, each post
//     running it from idle to idle;
//   - spread: 1000 actors on a Pool, each sent one message per round;
//   - burst: one actor sent rounds of 1000 messages, which queue;
//   - parallel: GOMAXPROCS goroutines sending to one actor.
func BenchmarkMailbox(b *testing.B) {
	msg := &posted{}
	for _, p := range []struct {
		name    string
		produce actor.MailboxProducer
	}{{"unbounded", actor.Unbounded()}, {"lean", Mailbox()}} {
		b.Run("mailbox/"+p.name, func(b *testing.B) {
			mb := p.produce()
			mb.RegisterHandlers(nopInvoker{}, actor.NewSynchronizedDispatcher(300))
			b.ReportAllocs()
			for b.Loop() {
				mb.PostUserMessage(msg)
			}
		})
		for _, shape := range []struct {
			name           string
			actors, rounds int
		}{{"spread", 1000, 1000}, {"burst", 1, 1000}} {
			b.Run(shape.name+"/"+p.name, func(b *testing.B) {
				pool := New(0, 0)
				sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
				var wg sync.WaitGroup
				props := actor.PropsFromProducer(func() actor.Actor { return doneActor{&wg} },
					actor.WithMailbox(p.produce), actor.WithDispatcher(pool))
				pids := make([]*actor.PID, shape.actors)
				for i := range pids {
					pids[i] = sys.Root.Spawn(props)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					wg.Add(1)
					sys.Root.Send(pids[i%len(pids)], msg)
					if i%shape.rounds == shape.rounds-1 {
						wg.Wait()
					}
				}
				wg.Wait()
				b.StopTimer()
				sys.Shutdown()
				pool.Close()
				pool.Wait()
			})
		}
		b.Run("parallel/"+p.name, func(b *testing.B) {
			pool := New(0, 0)
			sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
			var wg sync.WaitGroup
			pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return doneActor{&wg} },
				actor.WithMailbox(p.produce), actor.WithDispatcher(pool)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					wg.Add(1)
					sys.Root.Send(pid, msg)
				}
			})
			wg.Wait()
			b.StopTimer()
			sys.Shutdown()
			pool.Close()
			pool.Wait()
		})
	}
}
