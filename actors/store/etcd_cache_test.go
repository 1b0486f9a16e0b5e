package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/btree"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// TestEtcdCacheSeesOtherWriters: a cached store's reads are
// linearizable: whatever another client's write acknowledged before a
// read began, of any kind, the read sees, though the cache learns it
// through a watch that may lag.
func TestEtcdCacheSeesOtherWriters(t *testing.T) {
	srv := sharedEtcd(t)
	prefix := freshPrefix()
	cached := openEtcd(t, srv, EtcdConfig{Prefix: prefix, Cache: true})
	writer := openEtcd(t, srv, EtcdConfig{Prefix: prefix})
	must(t, writer.PutNode(NodeSpec{Name: "n1"}))
	for i := range 60 {
		v := cloud.VolumeID(fmt.Sprintf("v%03d", i))
		switch i % 4 {
		case 0:
			must(t, writer.PutVolume(VolumeSpec{ID: v}))
			if _, ok, err := cached.Volume(v); !ok || err != nil {
				t.Fatalf("step %d: volume %s written by another client: found %v, %v", i, v, ok, err)
			}
		case 1:
			must(t, writer.PutWorkload(Workload{UID: string(v), Node: "n1", Volumes: []cloud.VolumeID{v}}))
			if nodes, err := cached.DesiredNodes(v); err != nil || len(nodes) != 1 {
				t.Fatalf("step %d: desired nodes of %s = %v, %v; want [n1]", i, v, nodes, err)
			}
		case 2:
			must(t, writer.PutNodeStatus(nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{v: "/dev/x"}}))
			if sts, err := cached.StatusesWithVolume(v); err != nil || len(sts) != 1 {
				t.Fatalf("step %d: statuses with %s = %v, %v; want n1's", i, v, sts, err)
			}
		case 3:
			epoch, err := writer.Claim(VolumeOwner(v))
			must(t, err)
			must(t, writer.PutIntent(Intent{Volume: v, Node: "n1", Op: uint64(i), Attach: true, Epoch: epoch}))
			if ins, err := cached.Intents(v); err != nil || len(ins) != 1 || ins[0].Op != uint64(i) {
				t.Fatalf("step %d: intents of %s = %+v, %v; want op %d", i, v, ins, err, i)
			}
		}
		before, err := writer.Revision()
		must(t, err)
		if got, err := cached.Revision(); err != nil || got != before {
			t.Fatalf("step %d: Revision = %d, %v; the writer read %d", i, got, err, before)
		}
	}
	// And a snapshot equal to the uncached one.
	if a, b := snap(t, cached), snap(t, writer); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("cached snapshot\n %+v\nuncached\n %+v", a, b)
	}
}

// TestEtcdCacheWritesReadTheCache: once cached, a node status write is
// one request (no read before it), and a write that read a stale cache
// (another client wrote the same status) still lands, reading again.
func TestEtcdCacheWritesReadTheCache(t *testing.T) {
	srv := sharedEtcd(t)
	prefix := freshPrefix()
	cached := openEtcd(t, srv, EtcdConfig{Prefix: prefix, Cache: true})
	other := openEtcd(t, srv, EtcdConfig{Prefix: prefix})
	st := nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{}}
	for i := range 20 {
		st.VolumesAttached[cloud.VolumeID(fmt.Sprintf("v%d", i))] = "/dev/x"
		before := cached.Requests()
		must(t, cached.PutNodeStatus(st))
		after := cached.Requests()
		if d := after[ReqTxnWrite] - before[ReqTxnWrite]; d != 1 || after[ReqRange] != before[ReqRange] || after[ReqTxnRead] != before[ReqTxnRead] {
			t.Fatalf("write %d: requests %v -> %v, want exactly one write transaction", i, before, after)
		}
	}
	// Another client's write makes the cache's copy stale for a moment.
	must(t, other.PutNodeStatus(nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"w": "/dev/y"}}))
	st.VolumesAttached = map[cloud.VolumeID]string{"z": "/dev/z"}
	must(t, cached.PutNodeStatus(st))
	for _, v := range []cloud.VolumeID{"w", "v3"} {
		if sts, err := other.StatusesWithVolume(v); err != nil || len(sts) != 0 {
			t.Fatalf("statuses with %s after the last write = %+v, %v; want none (the index follows the status)", v, sts, err)
		}
	}
	if got, _, err := other.NodeStatus("n1"); err != nil || len(got.VolumesAttached) != 1 || got.VolumesAttached["z"] != "/dev/z" {
		t.Fatalf("status = %+v, %v; want z alone", got, err)
	}
}

// TestBarrierCoalesces: waiters that arrive while a request is in flight
// share the next one, never the one in flight (it may have been answered
// before they arrived).
func TestBarrierCoalesces(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	release := make(chan struct{})
	b := barrier{timeout: 5 * time.Second, fetch: func(context.Context) (int64, error) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		<-release
		return int64(n), nil
	}}
	ctx := context.Background()
	first := make(chan int64)
	go func() { r, _ := b.wait(ctx); first <- r }()
	testkit.Eventually(t, 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return calls == 1 }, "condition not reached")
	// Ten more arrive while the first request is in flight.
	const n = 10
	got := make(chan int64, n)
	var joined sync.WaitGroup
	for range n {
		joined.Add(1)
		go func() {
			joined.Done()
			r, _ := b.wait(ctx)
			got <- r
		}()
	}
	joined.Wait()
	testkit.Eventually(t, 5*time.Second, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.next != nil && b.next.waiters == n }, "condition not reached")
	close(release)
	if r := <-first; r != 1 {
		t.Fatalf("first waiter answered by request %d, want 1", r)
	}
	for range n {
		if r := <-got; r != 2 {
			t.Fatalf("a waiter that arrived during request 1 was answered by request %d, want 2", r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d requests for 11 waiters in two waves, want 2", calls)
	}
}

// TestEtcdCacheToldDesiredChanges: a cached store tells, from its watch,
// the volumes whose desired state anyone's write changed: a volume put or
// deleted, the volumes of a workload before and after it changed; not a
// node status, an intent or a claim.
func TestEtcdCacheToldDesiredChanges(t *testing.T) {
	srv := sharedEtcd(t)
	prefix := freshPrefix()
	cached := openEtcd(t, srv, EtcdConfig{Prefix: prefix, Cache: true})
	writer := openEtcd(t, srv, EtcdConfig{Prefix: prefix})
	told := make(chan []cloud.VolumeID, 100)
	cached.OnDesiredChange(func(vols []cloud.VolumeID) { told <- vols })
	expect := func(what string, want ...cloud.VolumeID) {
		t.Helper()
		got := map[cloud.VolumeID]bool{}
		deadline := time.After(5 * time.Second)
		for len(got) < len(want) {
			select {
			case vols := <-told:
				for _, v := range vols {
					got[v] = true
				}
			case <-deadline:
				t.Fatalf("%s: told %v within 5 s, want %v", what, got, want)
			}
		}
		for _, v := range want {
			if !got[v] {
				t.Fatalf("%s: told %v, want %v", what, got, want)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: told %v, want only %v", what, got, want)
		}
	}
	must(t, writer.PutVolume(VolumeSpec{ID: "a"}))
	expect("a volume put", "a")
	must(t, writer.Apply([]Op{{PutNode: &NodeSpec{Name: "n1"}}, {PutVolume: &VolumeSpec{ID: "b"}}}))
	expect("a node and a volume put", "b")
	must(t, writer.PutWorkload(Workload{UID: "w", Node: "n1", Volumes: []cloud.VolumeID{"a"}}))
	expect("a workload created", "a")
	must(t, writer.PutWorkload(Workload{UID: "w", Node: "n1", Volumes: []cloud.VolumeID{"b"}}))
	expect("a workload moved to another volume", "a", "b")
	// Writes that change no desired state tell nothing; the next one
	// that does is all that is told.
	must(t, writer.PutNodeStatus(nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"a": "/dev/a"}}))
	epoch, err := writer.Claim(VolumeOwner("a"))
	must(t, err)
	must(t, writer.PutIntent(Intent{Volume: "a", Node: "n1", Attach: true, Epoch: epoch}))
	must(t, writer.DeleteWorkload("w"))
	expect("a workload deleted (after a status, a claim and an intent)", "b")
	must(t, writer.DeleteVolume("a"))
	expect("a volume deleted", "a")
}

// TestEtcdDesiredDiff: what a listing after a lost watch tells: every
// volume whose record, or whose workloads' records, differ between the
// copies (put, changed or deleted), nothing else.
func TestEtcdDesiredDiff(t *testing.T) {
	e := &Etcd{k: etcdKeys("/p/")}
	rec := func(w Workload) []byte {
		data, err := marshalRecord(toWorkloadRecord(w))
		must(t, err)
		return data
	}
	a, b := btree.NewG(32, lessKV), btree.NewG(32, lessKV)
	for _, kv := range []cacheKV{
		{key: e.k.volume("same"), mod: 1}, {key: e.k.volume("gone"), mod: 2}, {key: e.k.volume("changed"), mod: 3},
		{key: e.k.workload("w"), value: rec(Workload{UID: "w", Volumes: []cloud.VolumeID{"x"}}), mod: 4},
		{key: e.k.status("n1"), mod: 5},
	} {
		a.ReplaceOrInsert(kv)
	}
	for _, kv := range []cacheKV{
		{key: e.k.volume("same"), mod: 1}, {key: e.k.volume("changed"), mod: 9}, {key: e.k.volume("new"), mod: 10},
		{key: e.k.workload("w"), value: rec(Workload{UID: "w", Volumes: []cloud.VolumeID{"y"}}), mod: 11},
		{key: e.k.status("n1"), mod: 12},
	} {
		b.ReplaceOrInsert(kv)
	}
	got := e.desiredDiff(a, b)
	slices.Sort(got)
	if want := []cloud.VolumeID{"changed", "gone", "new", "x", "y"}; !slices.Equal(got, want) {
		t.Fatalf("diff = %v, want %v", got, want)
	}
}
