package supervisor

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
)

// These tests run the strategy on a real actor system. Timers are on a fake
// clock, so a restart can only happen when the test advances it; waits on
// the actor goroutines are bounded by waitTimeout.

const waitTimeout = 10 * time.Second

// journal is what the supervised child saw, in order. Waiters are woken
// through a channel closed on every append.
type journal struct {
	mu      sync.Mutex
	events  []string
	changed chan struct{}
}

func newJournal() *journal { return &journal{changed: make(chan struct{})} }

func (j *journal) add(ev string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, ev)
	close(j.changed)
	j.changed = make(chan struct{})
}

func (j *journal) count(ev string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, e := range j.events {
		if e == ev {
			n++
		}
	}
	return n
}

func (j *journal) snapshot() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

// waitCount waits until ev has been seen n times.
func (j *journal) waitCount(t *testing.T, ev string, n int) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		j.mu.Lock()
		changed := j.changed
		j.mu.Unlock()
		if j.count(ev) >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("waited %v for %d x %q; journal: %v", waitTimeout, n, ev, j.snapshot())
		}
	}
}

// child records its lifecycle and messages; "boom" makes it panic.
type child struct{ j *journal }

func (c *child) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.j.add("started")
	case *actor.Restarting:
		c.j.add("restarting")
	case *actor.Stopped:
		c.j.add("stopped")
	case string:
		if m == "boom" {
			panic("boom")
		}
		c.j.add(m)
	}
}

// parent spawns one child in Started and hands its PID to the test.
type parent struct {
	j      *journal
	spawns chan<- *actor.PID
}

func (p *parent) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		j := p.j
		p.spawns <- ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return &child{j: j} }))
	}
}

type harness struct {
	system   *actor.ActorSystem
	clock    *clock.Fake
	journal  *journal
	child    *actor.PID
	restarts chan decision
}

func newSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	t.Cleanup(system.Shutdown)
	return system
}

func testConfig(fc *clock.Fake, restarts chan<- decision) Config {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return Config{
		Policy: backoff.Default,
		Quiet:  5 * time.Minute,
		Clock:  fc,
		Rand:   func() float64 { return 0 },
		Log:    log,
		OnRestart: func(c *actor.PID, failures int, delay time.Duration, _ interface{}) {
			restarts <- decision{c.GetId(), failures, delay}
		},
	}
}

// start spawns a parent supervising with the strategy and waits for its
// child to start. The parent is stopped (and with it the child) at cleanup.
func start(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		system:   newSystem(t),
		clock:    clock.NewFake(epoch),
		journal:  newJournal(),
		restarts: make(chan decision, 64),
	}
	spawns := make(chan *actor.PID, 1)
	props := actor.PropsFromProducer(
		func() actor.Actor { return &parent{j: h.journal, spawns: spawns} },
		actor.WithSupervisor(NewStrategy(testConfig(h.clock, h.restarts))),
	)
	pid := h.system.Root.Spawn(props)
	t.Cleanup(func() {
		if err := h.system.Root.StopFuture(pid).Wait(); err != nil {
			t.Errorf("stopping parent: %v", err)
		}
	})
	select {
	case h.child = <-spawns:
	case <-time.After(waitTimeout):
		t.Fatal("parent did not spawn its child")
	}
	h.journal.waitCount(t, "started", 1)
	return h
}

// crash makes the child panic and returns the restart decision, once the
// restart timer is registered.
func (h *harness) crash(t *testing.T) decision {
	t.Helper()
	h.system.Root.Send(h.child, "boom")
	if !h.clock.BlockUntil(1, waitTimeout) {
		t.Fatal("no restart timer registered after the panic")
	}
	select {
	case d := <-h.restarts:
		return d
	case <-time.After(waitTimeout):
		t.Fatal("OnRestart not called")
		return decision{}
	}
}

// crashAndRestart crashes the child, checks it is not restarted one
// nanosecond before the delay and is restarted at the delay.
func (h *harness) crashAndRestart(t *testing.T) decision {
	t.Helper()
	starts := h.journal.count("started")
	d := h.crash(t)
	h.clock.Advance(d.delay - time.Nanosecond)
	// Only the timer can restart the child, so this check is exact.
	if got := h.journal.count("restarting"); got != starts-1 {
		t.Fatalf("child restarting %d times before the %v delay elapsed, want %d", got, d.delay, starts-1)
	}
	if h.clock.Pending() != 1 {
		t.Fatalf("restart timer gone before its deadline")
	}
	h.clock.Advance(time.Nanosecond)
	h.journal.waitCount(t, "started", starts+1)
	if got := h.journal.count("restarting"); got != starts {
		t.Fatalf("restarting seen %d times, want %d", got, starts)
	}
	return d
}

func TestActorRestartDelaysDoubleToCap(t *testing.T) {
	h := start(t)
	want := []time.Duration{
		500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second,
		capDelay, capDelay,
	}
	for i, w := range want {
		d := h.crashAndRestart(t)
		if d.delay != w || d.failures != i+1 || d.child != h.child.GetId() {
			t.Fatalf("failure %d: got %+v, want delay %v for %s", i+1, d, w, h.child.GetId())
		}
	}
}

func TestActorQuietPeriodResets(t *testing.T) {
	h := start(t)
	for _, w := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if d := h.crashAndRestart(t); d.delay != w {
			t.Fatalf("delay %v, want %v", d.delay, w)
		}
	}
	h.clock.Advance(5 * time.Minute)
	if d := h.crashAndRestart(t); d.delay != 500*time.Millisecond || d.failures != 1 {
		t.Fatalf("after the quiet period: %+v, want 500ms as failure 1", d)
	}
	if d := h.crashAndRestart(t); d.delay != time.Second {
		t.Fatalf("next failure: %v, want 1s", d.delay)
	}
}

func TestActorMessagesWaitForRestart(t *testing.T) {
	h := start(t)
	events := make(chan *actor.SupervisorEvent, 8)
	sub := h.system.EventStream.Subscribe(func(evt interface{}) {
		if e, ok := evt.(*actor.SupervisorEvent); ok {
			events <- e
		}
	})
	t.Cleanup(func() { h.system.EventStream.Unsubscribe(sub) })

	d := h.crash(t)
	// The child suspended its mailbox before reporting the failure, and the
	// failure was handled before BlockUntil returned: these queue up.
	for i := 0; i < 3; i++ {
		h.system.Root.Send(h.child, fmt.Sprint("hello ", i))
	}
	if got := h.journal.count("hello 0"); got != 0 {
		t.Fatalf("message processed while the child awaits its restart")
	}
	select {
	case e := <-events:
		if e.Directive != actor.RestartDirective || !e.Child.Equal(h.child) || e.Reason != "boom" {
			t.Fatalf("supervisor event %+v", e)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no SupervisorEvent published")
	}

	h.clock.Advance(d.delay)
	h.journal.waitCount(t, "hello 2", 1)
	want := []string{"started", "restarting", "started", "hello 0", "hello 1", "hello 2"}
	if got := h.journal.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("journal %v, want %v", got, want)
	}
}

func TestActorStopWhileAwaitingRestart(t *testing.T) {
	h := start(t)
	d := h.crash(t)
	// Stop is a system message: it gets through the suspended mailbox.
	if err := h.system.Root.StopFuture(h.child).Wait(); err != nil {
		t.Fatalf("stopping the suspended child: %v", err)
	}
	if h.journal.count("stopped") != 1 {
		t.Fatalf("journal %v lacks stopped", h.journal.snapshot())
	}
	// The late restart goes to the dead PID: the dead-letter process
	// publishes it synchronously, inside Advance.
	var mu sync.Mutex
	var dead []interface{}
	sub := h.system.EventStream.Subscribe(func(evt interface{}) {
		if e, ok := evt.(*actor.DeadLetterEvent); ok && e.PID.Equal(h.child) {
			mu.Lock()
			dead = append(dead, e.Message)
			mu.Unlock()
		}
	})
	t.Cleanup(func() { h.system.EventStream.Unsubscribe(sub) })
	h.clock.Advance(d.delay)
	mu.Lock()
	defer mu.Unlock()
	if len(dead) != 1 {
		t.Fatalf("dead letters to the stopped child: %v, want one Restart", dead)
	}
	if _, ok := dead[0].(*actor.Restart); !ok {
		t.Fatalf("dead letter %T, want *actor.Restart", dead[0])
	}
	if got := h.journal.count("started"); got != 1 {
		t.Fatalf("stopped child started %d times", got)
	}
}

func TestActorGuardianNeverEscalates(t *testing.T) {
	system := newSystem(t)
	fc := clock.NewFake(epoch)
	restarts := make(chan decision, 8)
	j := newJournal()
	props := actor.PropsFromProducer(
		func() actor.Actor { return &child{j: j} },
		actor.WithGuardian(NewStrategy(testConfig(fc, restarts))),
	)
	pid := system.Root.Spawn(props)
	t.Cleanup(func() {
		if err := system.Root.StopFuture(pid).Wait(); err != nil {
			t.Errorf("stopping child: %v", err)
		}
	})
	j.waitCount(t, "started", 1)
	for i, w := range []time.Duration{500 * time.Millisecond, time.Second} {
		system.Root.Send(pid, "boom")
		if !fc.BlockUntil(1, waitTimeout) {
			t.Fatal("guardian registered no restart timer")
		}
		// OnRestart runs before the timer is registered, so it has reported.
		if d := <-restarts; d.delay != w {
			t.Fatalf("guardian delay %v, want %v", d.delay, w)
		}
		fc.Advance(w)
		j.waitCount(t, "started", i+2)
	}
}
