package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/actors/events"
)

// testClock is the injected clock of the event logs' tests.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// eventBackend opens an event log of one backend, reopens it (a restart:
// a new process on the same file or etcd), and counts the events it
// stores (expired or over the bound but not yet removed included).
type eventBackend struct {
	name   string
	open   func(t *testing.T, opts EventOptions) (log events.Log, reopen func() events.Log, stored func() int)
	memory bool // no restart to survive
}

func eventBackends() []eventBackend {
	return []eventBackend{
		{name: "memory", memory: true, open: func(t *testing.T, opts EventOptions) (events.Log, func() events.Log, func() int) {
			m, err := NewMemoryEvents(opts)
			must(t, err)
			return m, nil, func() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.list) }
		}},
		{name: "bolt", open: func(t *testing.T, opts EventOptions) (events.Log, func() events.Log, func() int) {
			path := filepath.Join(t.TempDir(), "store.db")
			b, err := CreateBolt(path)
			must(t, err)
			cur := b
			t.Cleanup(func() { _ = cur.Close() })
			l, err := b.Events(opts)
			must(t, err)
			reopen := func() events.Log {
				must(t, cur.Close())
				cur = openBolt(t, path)
				l, err := cur.Events(opts)
				must(t, err)
				return l
			}
			stored := func() (n int) {
				must(t, cur.db.View(func(tx *bolt.Tx) error {
					evb, names := tx.Bucket(bucketEvents), tx.Bucket(bucketEventNames)
					if evb == nil {
						return nil
					}
					n = evb.Stats().KeyN
					if m := names.Stats().KeyN; m != n {
						return fmt.Errorf("%d events but %d in event-names", n, m)
					}
					return nil
				}))
				return n
			}
			return l, reopen, stored
		}},
		{name: "etcd", open: func(t *testing.T, opts EventOptions) (events.Log, func() events.Log, func() int) {
			srv, prefix := sharedEtcd(t), freshPrefix()
			e := openEtcd(t, srv, EtcdConfig{Prefix: prefix})
			l, err := e.Events(opts)
			must(t, err)
			reopen := func() events.Log {
				l, err := openEtcd(t, srv, EtcdConfig{Prefix: prefix}).Events(opts)
				must(t, err)
				return l
			}
			stored := func() int {
				resp, err := e.c.Get(context.Background(), EventsPrefix(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
				must(t, err)
				return int(resp.Count)
			}
			return l, reopen, stored
		}},
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ev(clk *testClock, kind events.Kind, name, uid, msg string) events.Event {
	return events.Event{Time: clk.Now(), Object: events.Ref{Kind: kind, Name: name, UID: uid}, Type: "T", Message: msg}
}

func msgs(evs []events.Event) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Message)
	}
	return b.String()
}

func list(t *testing.T, l events.Log, q events.Query) string {
	t.Helper()
	evs, _, err := l.ListEvents(context.Background(), q)
	must(t, err)
	return msgs(evs)
}

func appendAll(t *testing.T, l events.Log, evs ...events.Event) {
	t.Helper()
	must(t, l.AppendEvents(context.Background(), evs))
}

// Every backend: events come back oldest first (newest last) in the order
// they were appended, whatever their objects, and a query selects a kind,
// a name or an incarnation.
func TestEventLogOrderAndQueries(t *testing.T) {
	for _, be := range eventBackends() {
		t.Run(be.name, func(t *testing.T) {
			clk := &testClock{now: t0}
			l, _, _ := be.open(t, EventOptions{Now: clk.Now})
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "1"), ev(clk, events.KindNode, "n1", "x", "2"))
			appendAll(t, l, ev(clk, events.KindVolume, "v2", "b", "3"), ev(clk, events.KindVolume, "v1", "a", "4"),
				ev(clk, events.KindWorkload, "w/1", "c", "5"))
			for _, c := range []struct {
				q    events.Query
				want string
			}{
				{events.Query{}, "1 2 3 4 5"},
				{events.Query{Kind: events.KindVolume}, "1 3 4"},
				{events.Query{Kind: events.KindVolume, Name: "v1"}, "1 4"},
				{events.Query{Kind: events.KindWorkload, Name: "w/1"}, "5"},
				{events.Query{Kind: events.KindVolume, Name: "v"}, ""}, // a name is not a prefix
				{events.Query{Kind: events.KindVolume, Name: "v1", UID: "other"}, ""},
			} {
				if got := list(t, l, c.q); got != c.want {
					t.Errorf("list %+v = %q, want %q", c.q, got, c.want)
				}
			}
			if _, _, err := l.ListEvents(context.Background(), events.Query{Name: "v1"}); err == nil {
				t.Error("a name without a kind was listed, want an error")
			}
			bad := events.Event{Object: events.Ref{Kind: "volume", Name: "a\x00b"}, Type: "T"}
			if err := l.AppendEvents(context.Background(), []events.Event{ev(clk, events.KindVolume, "v9", "", "ok"), bad}); err == nil {
				t.Error("an event named with a NUL was appended, want an error")
			}
			if got := list(t, l, events.Query{Kind: events.KindVolume, Name: "v9"}); got != "" {
				t.Errorf("a refused batch left %q behind", got)
			}
		})
	}
}

// The bound per name keeps the newest PerObject events of every
// incarnation of a name, and removes the others from storage (not only
// from reads).
func TestEventLogBoundPerObject(t *testing.T) {
	for _, be := range eventBackends() {
		t.Run(be.name, func(t *testing.T) {
			clk := &testClock{now: t0}
			l, _, stored := be.open(t, EventOptions{PerObject: 3, Now: clk.Now})
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "1"), ev(clk, events.KindVolume, "v1", "a", "2"))
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "b", "3"), ev(clk, events.KindNode, "v1", "", "n"),
				ev(clk, events.KindVolume, "v1", "b", "4"), ev(clk, events.KindVolume, "v1", "b", "5"))
			if got := list(t, l, events.Query{Kind: events.KindVolume, Name: "v1"}); got != "3 4 5" {
				t.Errorf("v1 = %q, want the newest three: \"3 4 5\"", got)
			}
			if got := list(t, l, events.Query{}); got != "3 n 4 5" {
				t.Errorf("all = %q, want \"3 n 4 5\"", got)
			}
			if n := stored(); n != 4 {
				t.Errorf("%d events stored, want 4 (3 of volume v1, 1 of node v1)", n)
			}
		})
	}
}

// An event lives TTL from its time: reads stop returning it at once, and
// storage lets go of it (Bolt and memory by the sweep; etcd by its lease,
// TestEtcdEventLeases).
func TestEventLogTTL(t *testing.T) {
	for _, be := range eventBackends() {
		t.Run(be.name, func(t *testing.T) {
			clk := &testClock{now: t0}
			l, _, stored := be.open(t, EventOptions{TTL: time.Hour, Now: clk.Now})
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "old"))
			clk.Advance(30 * time.Minute)
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "new"))
			clk.Advance(30*time.Minute - time.Nanosecond)
			if got := list(t, l, events.Query{}); got != "old new" {
				t.Fatalf("just before the hour: %q, want \"old new\"", got)
			}
			clk.Advance(time.Nanosecond)
			if got := list(t, l, events.Query{}); got != "new" {
				t.Errorf("after the hour: %q, want \"new\"", got)
			}
			sw, ok := l.(events.Sweeper)
			if !ok {
				return
			}
			n, err := sw.SweepEvents(context.Background())
			must(t, err)
			if n != 1 || stored() != 1 {
				t.Errorf("sweep removed %d, %d stored; want 1 removed, 1 stored", n, stored())
			}
		})
	}
}

// A restart (the file reopened, another client of etcd) keeps every
// event; the log goes on after the last one.
func TestEventLogSurvivesRestart(t *testing.T) {
	for _, be := range eventBackends() {
		if be.memory {
			continue
		}
		t.Run(be.name, func(t *testing.T) {
			clk := &testClock{now: t0}
			l, reopen, _ := be.open(t, EventOptions{Now: clk.Now})
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "1"), ev(clk, events.KindNode, "n1", "x", "2"))
			l = reopen()
			if got := list(t, l, events.Query{}); got != "1 2" {
				t.Fatalf("after a restart: %q, want \"1 2\"", got)
			}
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "3")) // the same clock reading: still after
			if got := list(t, l, events.Query{}); got != "1 2 3" {
				t.Errorf("after a restart and an append: %q, want \"1 2 3\"", got)
			}
		})
	}
}

// A watch from a list's cursor delivers what was appended after the list,
// once each, in order, and only what its query selects.
func TestEventLogWatch(t *testing.T) {
	for _, be := range eventBackends() {
		t.Run(be.name, func(t *testing.T) {
			clk := &testClock{now: t0}
			l, _, _ := be.open(t, EventOptions{Now: clk.Now})
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "before"))
			q := events.Query{Kind: events.KindVolume}
			_, cursor, err := l.ListEvents(context.Background(), q)
			must(t, err)
			appendAll(t, l, ev(clk, events.KindVolume, "v1", "a", "1"), ev(clk, events.KindNode, "n1", "", "node"))
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan string, 10)
			done := make(chan error, 1)
			go func() { done <- l.WatchEvents(ctx, q, cursor, func(e events.Event) { got <- e.Message }) }()
			appendAll(t, l, ev(clk, events.KindVolume, "v2", "b", "2"))
			var seen []string
			deadline := time.After(10 * time.Second)
			for len(seen) < 2 {
				select {
				case m := <-got:
					seen = append(seen, m)
				case <-deadline:
					t.Fatalf("watch delivered %q within 10 s, want [1 2]", seen)
				}
			}
			cancel()
			must(t, <-done)
			close(got)
			for m := range got {
				seen = append(seen, m)
			}
			if s := strings.Join(seen, " "); s != "1 2" {
				t.Errorf("watch delivered %q, want \"1 2\"", s)
			}
		})
	}
}

// etcd: events share one lease per reuse window (not one each), granted
// for the TTL plus the window; the next window gets a new one.
func TestEtcdEventLeases(t *testing.T) {
	clk := &testClock{now: t0}
	e := freshEtcd(t)
	l, err := e.Events(EventOptions{TTL: time.Hour, Now: clk.Now})
	must(t, err)
	ctx := context.Background()
	leases := func() map[clientv3.LeaseID]int {
		resp, err := e.c.Get(ctx, l.prefix, clientv3.WithPrefix())
		must(t, err)
		out := map[clientv3.LeaseID]int{}
		for _, kv := range resp.Kvs {
			out[clientv3.LeaseID(kv.Lease)]++
		}
		return out
	}
	appendAll(t, l, ev(clk, events.KindVolume, "v1", "", "1"))
	clk.Advance(time.Minute - time.Nanosecond) // the window is 5% of the TTL, at most a minute: 1 min
	appendAll(t, l, ev(clk, events.KindVolume, "v2", "", "2"))
	got := leases()
	if len(got) != 1 {
		t.Fatalf("leases within one window: %v, want one", got)
	}
	for id := range got {
		if id == 0 {
			t.Fatal("events written without a lease")
		}
		ttl, err := e.c.TimeToLive(ctx, id)
		must(t, err)
		if want := int64((time.Hour + time.Minute) / time.Second); ttl.GrantedTTL != want {
			t.Errorf("lease granted for %d s, want %d (TTL plus the window)", ttl.GrantedTTL, want)
		}
	}
	clk.Advance(time.Nanosecond)
	appendAll(t, l, ev(clk, events.KindVolume, "v3", "", "3"))
	if got := leases(); len(got) != 2 {
		t.Errorf("leases over two windows: %v, want two", got)
	}
}

// etcd lets go of the events when their lease expires (real time: the
// shortest TTL).
func TestEtcdEventsExpire(t *testing.T) {
	e := freshEtcd(t)
	l, err := e.Events(EventOptions{TTL: MinEventTTL})
	must(t, err)
	ctx := context.Background()
	appendAll(t, l, events.Event{Time: time.Now(), Object: events.Ref{Kind: events.KindVolume, Name: "v1"}, Type: "T"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := e.c.Get(ctx, l.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		must(t, err)
		if resp.Count == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events still stored 20 s after a TTL of %v", resp.Count, MinEventTTL)
		}
		time.Sleep(100 * time.Millisecond) // polling etcd for the lease's end
	}
}

func TestEventOptionsValidate(t *testing.T) {
	for _, o := range []EventOptions{{TTL: time.Millisecond}, {TTL: MaxEventTTL + time.Second}, {PerObject: -1}, {PerObject: MaxEventsPerObject + 1}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted, want an error", o)
		}
	}
	if err := (EventOptions{}).Validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
