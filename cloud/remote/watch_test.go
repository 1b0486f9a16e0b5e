package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
)

// watcher runs Client.Watch in a goroutine: its events arrive on events,
// its error on done. It is cancelled and waited for in t.Cleanup.
type watcher struct {
	events chan Event
	done   chan error
}

func startWatch(t *testing.T, cl *Client) *watcher {
	t.Helper()
	w := &watcher{events: make(chan Event, 1<<16), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		w.done <- cl.Watch(ctx, func(ev Event) error { w.events <- ev; return nil })
	}()
	t.Cleanup(func() { cancel(); w.end(t) })
	return w
}

// next returns the next event, failing the test after 10 s.
func (w *watcher) next(t *testing.T) Event {
	t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case err := <-w.done:
		w.done <- err
		t.Fatalf("the watch ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10s")
	}
	return Event{}
}

// synced reads the snapshot up to the synced mark, checking the
// numbering.
func (w *watcher) synced(t *testing.T) []sim.Change {
	t.Helper()
	var snap []sim.Change
	for seq := uint64(1); ; seq++ {
		ev := w.next(t)
		if ev.Seq != seq {
			t.Fatalf("event %+v, want seq %d", ev, seq)
		}
		if ev.Synced {
			return snap
		}
		if !ev.Snapshot {
			t.Fatalf("event %+v before the synced mark is no snapshot", ev)
		}
		snap = append(snap, ev.Change)
	}
}

// changes reads n changes, checking that they follow seq.
func (w *watcher) changes(t *testing.T, seq uint64, n int) []sim.Change {
	t.Helper()
	out := make([]sim.Change, 0, n)
	for range n {
		ev := w.next(t)
		seq++
		if ev.Seq != seq || ev.Snapshot || ev.Synced {
			t.Fatalf("event %+v, want change number %d", ev, seq)
		}
		out = append(out, ev.Change)
	}
	return out
}

// end returns the watch's error, failing the test after 10 s.
func (w *watcher) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.done:
		w.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end in 10s")
	}
	return nil
}

// timeline records the sim's own synchronous view of the changes.
type timeline struct {
	mu      sync.Mutex
	changes []sim.Change
}

func observe(c *sim.Cloud) *timeline {
	tl := &timeline{}
	c.ObserveSync(func(ch sim.Change) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		tl.changes = append(tl.changes, ch)
	})
	return tl
}

func (tl *timeline) get() []sim.Change {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.changes)
}

// sameChanges compares changes as they cross the wire: times to the
// nanosecond, without zone or monotonic reading.
func sameChanges(t *testing.T, what string, got, want []sim.Change) {
	t.Helper()
	eq := func(a, b sim.Change) bool {
		return a.Time.Equal(b.Time) && a.Volume == b.Volume && a.Instance == b.Instance && a.Node == b.Node &&
			a.Mode == b.Mode && a.Attached == b.Attached && a.Reason == b.Reason
	}
	if !slices.EqualFunc(got, want, eq) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// snapshotOf is the snapshot a watch starting now must send.
func snapshotOf(c *sim.Cloud, at time.Time) []sim.Change {
	var out []sim.Change
	att := c.Attachments()
	for _, v := range slices.Sorted(func(yield func(cloud.VolumeID) bool) {
		for v := range att {
			if !yield(v) {
				return
			}
		}
	}) {
		mode, _, _ := c.Volume(v)
		for _, inst := range att[v] {
			node := cloud.NodeName("")
			for _, n := range []cloud.NodeName{"n1", "n2", "n3"} {
				if id, ok := c.InstanceOf(n); ok && id == inst {
					node = n
				}
			}
			out = append(out, sim.Change{Time: at, Volume: v, Instance: inst, Node: node, Mode: mode, Attached: true, Reason: sim.ReasonSnapshot})
		}
	}
	return out
}

// TestWatchMatchesObserveSync: the snapshot, then every change as the
// sim's ObserveSync saw it, in order, numbered without gaps.
func TestWatchMatchesObserveSync(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock sync.Mutex
	c := sim.New(sim.Config{Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	tick := func() { clock.Lock(); defer clock.Unlock(); now = now.Add(time.Second) }
	r := newSimRig(t, c, DefaultWatchQueue)
	ctx := t.Context()
	i1, i2, i3 := c.AddInstance("n1"), c.AddInstance("n2"), c.AddInstance("n3")
	c.CreateVolume("x", cloud.Exclusive)
	c.CreateVolume("m", cloud.MultiNode)
	c.CreateVolume("y", cloud.Exclusive)
	for _, a := range []struct {
		vol  cloud.VolumeID
		inst cloud.InstanceID
	}{{"m", i2}, {"x", i1}, {"m", i1}} {
		if _, err := c.Attach(ctx, a.vol, a.inst); err != nil {
			t.Fatal(err)
		}
	}

	w := startWatch(t, r.cl)
	snap := w.synced(t)
	sameChanges(t, "snapshot", snap, snapshotOf(c, now))
	if len(snap) != 3 {
		t.Fatalf("snapshot of %d attachments, want 3", len(snap))
	}

	tl := observe(c)
	steps := []func() error{
		func() error { _, err := c.Attach(ctx, "y", i3); return err },
		func() error { return c.Detach(ctx, "x", i1) },
		func() error { return c.Detach(ctx, "x", i1) }, // idempotent: no change
		func() error { _, err := c.Attach(ctx, "x", i2); return err },
		func() error { return c.Terminate(i2) }, // x and m leave i2
		func() error { return c.ConsoleDetach("m", i1) },
		func() error { return mustStart(c, i2) },
		func() error { _, err := c.Attach(ctx, "m", i2); return err },
		func() error { return c.Delete(i3) }, // y leaves i3
		func() error { _, err := c.Replace("n2"); return err },
	}
	for i, step := range steps {
		tick()
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := tl.get()
	if len(want) != 9 {
		t.Fatalf("test setup: the sim saw %d changes, want 9: %v", len(want), want)
	}
	sameChanges(t, "changes", w.changes(t, uint64(len(snap))+1, len(want)), want)

	// Applied to the snapshot, the changes give the ground truth.
	state := map[[2]string]bool{}
	for _, ch := range append(snap, want...) {
		state[[2]string{string(ch.Volume), string(ch.Instance)}] = ch.Attached
	}
	got := map[cloud.VolumeID][]cloud.InstanceID{}
	for k, on := range state {
		if on {
			got[cloud.VolumeID(k[0])] = append(got[cloud.VolumeID(k[0])], cloud.InstanceID(k[1]))
		}
	}
	if truth := c.Attachments(); fmt.Sprint(got) != fmt.Sprint(truth) {
		t.Errorf("snapshot + changes = %v, the sim has %v", got, truth)
	}
}

func mustStart(c *sim.Cloud, inst cloud.InstanceID) error { return c.Start(inst) }

// TestWatchTwoWatchers: two watches of one cloud, changed from several
// goroutines at once, both see every change in the sim's order.
func TestWatchTwoWatchers(t *testing.T) {
	c := sim.New(sim.Config{})
	r := newSimRig(t, c, DefaultWatchQueue)
	other := dial(t, r.addr)
	w1, w2 := startWatch(t, r.cl), startWatch(t, other)
	w1.synced(t)
	w2.synced(t)
	tl := observe(c)

	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	for i := range workers {
		inst := c.AddInstance(cloud.NodeName(fmt.Sprintf("n%d", i)))
		vol := cloud.VolumeID(fmt.Sprintf("v%d", i))
		c.CreateVolume(vol, cloud.Exclusive)
		wg.Go(func() {
			for range rounds {
				if _, err := c.Attach(t.Context(), vol, inst); err != nil {
					t.Error(err)
					return
				}
				if err := c.Detach(t.Context(), vol, inst); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := tl.get()
	if len(want) != workers*rounds*2 {
		t.Fatalf("test setup: %d changes, want %d", len(want), workers*rounds*2)
	}
	sameChanges(t, "first watcher", w1.changes(t, 1, len(want)), want)
	sameChanges(t, "second watcher", w2.changes(t, 1, len(want)), want)
}

// TestWatchServerStopped: a watch whose server stops ends with an error.
func TestWatchServerStopped(t *testing.T) {
	r := newSimRig(t, sim.New(sim.Config{}), DefaultWatchQueue)
	w := startWatch(t, r.cl)
	w.synced(t)
	r.srv.Stop()
	err := w.end(t)
	if !errors.Is(err, ErrWatchEnded) || errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want one wrapping ErrWatchEnded", err)
	}
	if n := r.srv.admin.watches.Load(); n != 0 {
		t.Errorf("%d watches still served", n)
	}
}

// TestWatchCancelled: the caller's cancellation ends a watch with ctx's
// error, and the server lets go of it.
func TestWatchCancelled(t *testing.T) {
	r := newSimRig(t, sim.New(sim.Config{}), DefaultWatchQueue)
	ctx, cancel := context.WithCancel(t.Context())
	synced := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- r.cl.Watch(ctx, func(ev Event) error {
			if ev.Synced {
				close(synced)
			}
			return nil
		})
	}()
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("not synced in 10s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end in 10s")
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return r.srv.admin.watches.Load() == 0 }, "the server let go of the watch")
}

// TestWatchSlowWatcher: a watcher that stops reading has its watch ended
// with ErrWatchOverflow once its queue overflows, while the cloud and
// another watcher (same server, same queue size) keep going; what it did
// receive is a prefix of the changes. With a tiny queue the sender
// overflows as soon as it lags; with a larger one only once gRPC's flow
// control blocks it in Send, and the handler must end the stream without
// it.
func TestWatchSlowWatcher(t *testing.T) {
	for _, queue := range []int{4, 1024} {
		t.Run(fmt.Sprintf("queue %d", queue), func(t *testing.T) { testSlowWatcher(t, queue) })
	}
}

func testSlowWatcher(t *testing.T, queue int) {
	c := sim.New(sim.Config{})
	r := newSimRig(t, c, queue)
	inst := c.AddInstance("n1")
	c.CreateVolume("v", cloud.Exclusive)

	// The slow watcher's connection has fixed windows (no BDP growth), so
	// that gRPC's flow control stops its sender after about 128 KiB at
	// the latest.
	slowCl := dial(t, r.addr, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	synced, release := make(chan struct{}), make(chan struct{})
	var slowSeen []sim.Change
	slowDone := make(chan error, 1)
	go func() {
		slowDone <- slowCl.Watch(ctx, func(ev Event) error {
			switch {
			case ev.Synced:
				close(synced)
				<-release // stops reading
			case !ev.Snapshot:
				slowSeen = append(slowSeen, ev.Change)
			}
			return nil
		})
	}()
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow watcher did not sync in 10s")
	}
	fast := startWatch(t, r.cl)
	fast.synced(t)
	tl := observe(c)

	// Change the cloud in lock step with the fast watcher (its queue is
	// small too) until the server has ended the slow watch.
	var seq uint64 = 1
	var fastSeen []sim.Change
	for r.srv.admin.watches.Load() == 2 {
		if len(fastSeen) > 200_000 {
			t.Fatalf("the slow watch still runs after %d changes", len(fastSeen))
		}
		if _, err := c.Attach(t.Context(), "v", inst); err != nil {
			t.Fatal(err)
		}
		if err := c.Detach(t.Context(), "v", inst); err != nil {
			t.Fatal(err)
		}
		fastSeen = append(fastSeen, fast.changes(t, seq, 2)...)
		seq += 2
	}
	// The cloud and the fast watcher go on.
	if _, err := c.Attach(t.Context(), "v", inst); err != nil {
		t.Fatal(err)
	}
	fastSeen = append(fastSeen, fast.changes(t, seq, 1)...)
	want := tl.get()
	sameChanges(t, "the fast watcher", fastSeen, want)

	close(release)
	select {
	case err := <-slowDone:
		if !errors.Is(err, ErrWatchOverflow) || !errors.Is(err, ErrWatchEnded) {
			t.Errorf("slow watcher's error %v, want one wrapping ErrWatchOverflow and ErrWatchEnded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the slow watch did not end in 10s once read again")
	}
	if len(slowSeen) >= len(want) {
		t.Fatalf("the slow watcher saw %d changes of %d", len(slowSeen), len(want))
	}
	sameChanges(t, "the slow watcher's prefix", slowSeen, want[:len(slowSeen)])
	t.Logf("the slow watch ended after %d changes; it had received %d", len(want), len(slowSeen))
}
