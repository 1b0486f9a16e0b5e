package controller

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/messages"
)

// gatedStore holds node status writes while the gate is shut, so a test
// can queue messages behind a write in flight; it counts the writes and
// can fail the next ones.
type gatedStore struct {
	*store.Memory
	mu      sync.Mutex
	shut    chan struct{} // closed: writes pass
	entered chan struct{} // a write is waiting at the gate
	writes  []nodestatus.Status
	pass    int // writes that pass before fail ones fail
	fail    int
}

func (g *gatedStore) PutNodeStatusAt(s nodestatus.Status, epoch uint64) error {
	g.mu.Lock()
	gate := g.shut
	g.mu.Unlock()
	if gate != nil {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		<-gate
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pass > 0 {
		g.pass--
	} else if g.fail > 0 {
		g.fail--
		return errors.New("disk on fire")
	}
	g.writes = append(g.writes, s.Clone())
	return g.Memory.PutNodeStatusAt(s, epoch)
}

func (g *gatedStore) close() (open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate := make(chan struct{})
	g.shut, g.entered = gate, make(chan struct{}, 1)
	return func() {
		g.mu.Lock()
		g.shut = nil
		g.mu.Unlock()
		close(gate)
	}
}

func (g *gatedStore) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.writes)
}

// A burst of changes queued behind a node status write costs one more
// write, not one each (the group commit of node_flush.go); nobody hears of
// a change before the write that carries it, the answers keep their
// order, and a failed write refuses every prepare of its burst and
// restores the written status.
func TestNodeStatusBurstSharesOneWrite(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) { testBurst(t, fail, false) })
	}
	// A crash queued behind the burst, before its flush: the burst is
	// written as the actor restarts, not lost with it.
	t.Run("crash", func(t *testing.T) { testBurst(t, false, true) })
}

// oneNode starts a controller on st with one node, n1, whose agent has
// said hello; the fake clock only the test advances. Stopped at cleanup,
// leaving no goroutine.
func oneNode(t *testing.T, st store.Store) (*Controller, *actor.ActorSystem, *clock.Fake) {
	t.Helper()
	leaks := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1")}
	t.Cleanup(func() { goleak.VerifyNone(t, leaks...) })
	clk := clock.NewFake(start)
	cfg := DefaultConfig()
	cfg.Clock, cfg.Supervisor.Clock = clk, clk
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	cl := sim.New(sim.Config{Now: clk.Now, Permissive: true})
	cl.AddInstance("n1")
	ctl := New(sys, cfg, cl, st, events.NewRecorder(100))
	must(t, ctl.Start())
	t.Cleanup(func() {
		if err := ctl.Stop(5 * time.Second); err != nil {
			t.Errorf("stop: %v", err)
		}
		sys.Shutdown()
	})
	must(t, ctl.ApplyNode(store.NodeSpec{Name: "n1"}))
	ctl.Heartbeat("n1")
	return ctl, sys, clk
}

func testBurst(t *testing.T, fail, crash bool) {
	st := &gatedStore{Memory: store.NewMemory()}
	ctl, sys, clk := oneNode(t, st)
	ready := func() bool {
		s, ok, _ := st.NodeStatus("n1")
		return ok && s.Ready
	}
	testkit.Eventually(t, 10*time.Second, ready, "n1 persisted Ready")

	open := st.close()
	defer func() {
		if open != nil {
			open()
		}
	}()
	ctl.ReportVolumesInUse("n1", []cloud.VolumeID{"v0"}) // its write waits at the gate
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first report's write never reached the store")
	}
	before := st.count()
	// Queued behind the write in flight: nine more reports, then a query.
	var want []cloud.VolumeID
	for i := 1; i < 10; i++ {
		want = append(want, cloud.VolumeID(fmt.Sprintf("v%d", i)))
		ctl.ReportVolumesInUse("n1", slices.Clone(want))
	}
	st.mu.Lock()
	if fail { // the write in flight passes; the burst's fails
		st.pass, st.fail = 1, 1
	}
	st.mu.Unlock()
	if crash {
		sys.Root.Send(actor.NewPID(sys.Address(), nodePrefix+"n1"), &messages.Crash{Reason: "test"})
	}
	answer := make(chan []string, 1)
	go func() {
		s, err := ctl.NodeStatus("n1", 10*time.Second)
		if err != nil {
			t.Error(err)
			answer <- nil
			return
		}
		answer <- s.VolumesInUse
	}()
	open()
	open = nil
	if crash {
		// The supervisor restarts the actor after its backoff, on the
		// test's clock.
		for deadline := time.Now().Add(10 * time.Second); st.count()-before < 2; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes after the crash, want the burst's too", st.count()-before)
			}
			clk.Advance(100 * time.Millisecond)
		}
	}
	got := <-answer
	if fail {
		if got == nil || len(got) != 1 || got[0] != "v0" {
			t.Errorf("after the burst's write failed the status says in use %v, want the written [v0]", got)
		}
		s, _, _ := st.NodeStatus("n1")
		if !s.VolumesInUse["v0"] || len(s.VolumesInUse) != 1 {
			t.Errorf("stored in use %v, want [v0]", s.VolumesInUse)
		}
		if n := st.count() - before; n != 1 {
			t.Errorf("%d writes landed, want 1 (the burst's failed)", n)
		}
		return
	}
	if !crash && len(got) != 9 {
		t.Errorf("the query, queued after the burst, says in use %v, want v1-v9", got)
	}
	if n := st.count() - before; n != 2 {
		t.Errorf("%d writes for 10 reports (one in flight, nine queued behind it), want 2", n)
	}
	s, _, _ := st.NodeStatus("n1")
	if len(s.VolumesInUse) != 9 || s.VolumesInUse["v0"] {
		t.Errorf("stored in use %v, want v1-v9", s.VolumesInUse)
	}
}
