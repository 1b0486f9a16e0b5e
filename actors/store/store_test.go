package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// testStore is what the shared suite needs: a Store that can be made to fail.
type testStore interface {
	Store
	FailApplies(n int)
	FailNodeStatusWrites(n int)
}

// impls are the implementations every behavioural test runs against.
var impls = []struct {
	name string
	open func(t *testing.T) testStore
}{
	{"memory", func(*testing.T) testStore { return NewMemory() }},
	{"bolt", func(t *testing.T) testStore { return openBolt(t, filepath.Join(t.TempDir(), "store.db")) }},
	{"etcd", func(t *testing.T) testStore { return freshEtcd(t) }},
	{"etcd-cached", func(t *testing.T) testStore {
		return openEtcd(t, sharedEtcd(t), EtcdConfig{Prefix: freshPrefix(), Cache: true})
	}},
}

// forEach runs test once per implementation, on a fresh empty store.
func forEach(t *testing.T, test func(t *testing.T, s testStore)) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) { test(t, impl.open(t)) })
	}
}

// openBolt opens the Bolt at path, creating it if missing, that the test
// closes when it ends.
func openBolt(t testing.TB, path string) *Bolt {
	t.Helper()
	b, err := OpenBolt(path)
	if errors.Is(err, ErrMissing) {
		b, err = CreateBolt(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot is everything a store holds, read through its interface.
type snapshot struct {
	Rev       uint64
	Volumes   []VolumeSpec
	Nodes     []NodeSpec
	Workloads []Workload
	Statuses  []nodestatus.Status
}

func snap(t *testing.T, s Store) snapshot {
	t.Helper()
	var sn snapshot
	errs := make([]error, 5)
	sn.Rev, errs[0] = s.Revision()
	sn.Volumes, errs[1] = s.Volumes()
	sn.Nodes, errs[2] = s.Nodes()
	sn.Workloads, errs[3] = s.Workloads()
	sn.Statuses, errs[4] = s.NodeStatuses()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return sn
}

func TestDesiredNodesFollowWorkloadOrder(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		must(t, s.PutWorkload(Workload{UID: "b", Node: "n2", Volumes: []cloud.VolumeID{"v1"}}))
		must(t, s.PutWorkload(Workload{UID: "a", Node: "n1", Volumes: []cloud.VolumeID{"v1", "v2"}}))
		must(t, s.PutWorkload(Workload{UID: "c", Node: "n2", Volumes: []cloud.VolumeID{"v1"}}))
		got, _ := s.DesiredNodes("v1")
		if want := []cloud.NodeName{"n2", "n1"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("DesiredNodes(v1) = %v, want %v (creation order, no repeats)", got, want)
		}
		// Replacing a workload keeps its place; moving it off a volume unindexes it.
		must(t, s.PutWorkload(Workload{UID: "b", Node: "n3", Volumes: []cloud.VolumeID{"v2"}}))
		got, _ = s.DesiredNodes("v1")
		if want := []cloud.NodeName{"n1", "n2"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("after moving b: DesiredNodes(v1) = %v, want %v", got, want)
		}
		got, _ = s.DesiredNodes("v2")
		if want := []cloud.NodeName{"n3", "n1"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("DesiredNodes(v2) = %v, want %v", got, want)
		}
		on, _ := s.WorkloadsOn("n2")
		if len(on) != 1 || on[0].UID != "c" {
			t.Fatalf("WorkloadsOn(n2) = %+v, want only c (b moved to n3)", on)
		}
		must(t, s.DeleteWorkload("a"))
		must(t, s.DeleteWorkload("c"))
		if got, _ := s.DesiredNodes("v1"); len(got) != 0 {
			t.Fatalf("DesiredNodes(v1) = %v after deleting its workloads", got)
		}
		if err := s.PutWorkload(Workload{}); !errors.Is(err, ErrInvalidOp) {
			t.Fatalf("workload without UID: err = %v, want ErrInvalidOp", err)
		}
	})
}

func TestApplyIsAllOrNothing(t *testing.T) {
	w9 := Workload{UID: "w9", Node: "n1", Volumes: []cloud.VolumeID{"v9"}}
	tests := []struct {
		name   string
		inject int // FailApplies before the batch
		ops    []Op
		want   error
	}{
		{"third op is a workload without UID", 0, []Op{
			{PutVolume: &VolumeSpec{ID: "v9"}}, {PutWorkload: &w9}, {PutWorkload: &Workload{Node: "n1"}}, {DeleteWorkload: "a"},
		}, ErrInvalidOp},
		{"third op sets no field", 0, []Op{
			{DeleteWorkload: "a"}, {PutNode: &NodeSpec{Name: "n9"}}, {}, {PutWorkload: &w9},
		}, ErrInvalidOp},
		{"third op sets two fields", 0, []Op{
			{DeleteWorkload: "a"}, {PutWorkload: &w9}, {PutVolume: &VolumeSpec{ID: "v9"}, DeleteNode: "n1"},
		}, ErrInvalidOp},
		{"third op is a node without name", 0, []Op{
			{DeleteVolume: "v1"}, {PutWorkload: &w9}, {PutNode: &NodeSpec{}},
		}, ErrInvalidOp},
		{"third op is a volume without ID", 0, []Op{
			{DeleteNode: "n1"}, {PutWorkload: &w9}, {PutVolume: &VolumeSpec{Mode: cloud.MultiNode}},
		}, ErrInvalidOp},
		{"injected failure of a valid batch", 1, []Op{
			{DeleteWorkload: "a"}, {PutVolume: &VolumeSpec{ID: "v9"}}, {PutWorkload: &w9}, {DeleteVolume: "v1"},
		}, ErrInjected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s testStore) {
				must(t, s.Apply([]Op{
					{PutVolume: &VolumeSpec{ID: "v1"}},
					{PutNode: &NodeSpec{Name: "n1"}},
					{PutWorkload: &Workload{UID: "a", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
				}))
				before := snap(t, s)
				s.FailApplies(tt.inject)
				if err := s.Apply(tt.ops); !errors.Is(err, tt.want) {
					t.Fatalf("Apply = %v, want %v", err, tt.want)
				}
				if after := snap(t, s); !reflect.DeepEqual(after, before) {
					t.Fatalf("a failed Apply changed the store:\n before %+v\n after  %+v", before, after)
				}
				if got, _ := s.DesiredNodes("v9"); len(got) != 0 {
					t.Fatalf("DesiredNodes(v9) = %v after a failed Apply", got)
				}
				// The failed batch took no Seq, and the next Apply succeeds.
				must(t, s.PutWorkload(Workload{UID: "b", Node: "n1"}))
				if b, _, _ := s.Workload("b"); b.Seq != 2 {
					t.Fatalf("next workload's Seq = %d, want 2", b.Seq)
				}
			})
		})
	}
}

func TestRevisionCountsApplies(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		steps := []struct {
			name  string
			write func() error
			want  uint64
		}{
			{"empty store", func() error { return nil }, 0},
			{"single-op write", func() error { return s.PutVolume(VolumeSpec{ID: "v1"}) }, 1},
			{"batch of three", func() error {
				return s.Apply([]Op{{PutNode: &NodeSpec{Name: "n1"}}, {PutVolume: &VolumeSpec{ID: "v2"}}, {DeleteVolume: "v1"}})
			}, 2},
			{"empty batch", func() error { return s.Apply(nil) }, 3},
			{"delete of a missing volume", func() error { return s.DeleteVolume("nope") }, 4},
			{"failed batch", func() error { _ = s.Apply([]Op{{}}); return nil }, 4},
			{"injected failure", func() error {
				s.FailApplies(1)
				_ = s.DeleteNode("n1")
				return nil
			}, 4},
			{"node status write", func() error { return s.PutNodeStatus(nodestatus.Status{Name: "n1"}) }, 4},
			{"workload", func() error { return s.PutWorkload(Workload{UID: "w", Node: "n1"}) }, 5},
		}
		for _, st := range steps {
			must(t, st.write())
			if got, err := s.Revision(); err != nil || got != st.want {
				t.Fatalf("after %s: Revision = %d, %v; want %d", st.name, got, err, st.want)
			}
		}
	})
}

func TestWorkloadSeq(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		for _, uid := range []string{"a", "b", "c"} {
			must(t, s.PutWorkload(Workload{UID: uid, Node: "n1", Seq: 99})) // the store assigns Seq
		}
		must(t, s.PutWorkload(Workload{UID: "b", Node: "n2", Seq: 99})) // replaced: keeps 2
		must(t, s.DeleteWorkload("a"))
		must(t, s.PutWorkload(Workload{UID: "a", Node: "n1"})) // recreated: new Seq
		// In one batch: created, deleted, created again; created then replaced.
		must(t, s.Apply([]Op{
			{PutWorkload: &Workload{UID: "d", Node: "n1"}},
			{DeleteWorkload: "d"},
			{PutWorkload: &Workload{UID: "d", Node: "n2"}},
			{PutWorkload: &Workload{UID: "e", Node: "n1"}},
			{PutWorkload: &Workload{UID: "e", Node: "n2"}},
		}))
		ws, err := s.Workloads()
		must(t, err)
		var got []string
		for _, w := range ws {
			got = append(got, fmt.Sprintf("%s:%s:%d", w.UID, w.Node, w.Seq))
		}
		want := []string{"b:n2:2", "c:n1:3", "a:n1:4", "d:n2:6", "e:n2:7"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Workloads = %v, want %v", got, want)
		}
		on, err := s.WorkloadsOn("n2")
		must(t, err)
		got = got[:0]
		for _, w := range on {
			got = append(got, w.UID)
		}
		if want := []string{"b", "d", "e"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("WorkloadsOn(n2) = %v, want %v (by Seq)", got, want)
		}
		if on, err := s.WorkloadsOn("n9"); err != nil || len(on) != 0 {
			t.Fatalf("WorkloadsOn(n9) = %v, %v; want none", on, err)
		}
	})
}

func TestWorkloadRoundTrip(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		in := []Workload{
			{UID: "full", Node: "n1", Volumes: []cloud.VolumeID{"v2", "v1"}, ReadOnly: []cloud.VolumeID{"v1"}},
			{UID: "nil", Node: "n1"},
			{UID: "empty", Node: "n2", Volumes: []cloud.VolumeID{}, ReadOnly: []cloud.VolumeID{}},
		}
		for i, w := range in {
			must(t, s.PutWorkload(w))
			w.Seq = uint64(i + 1)
			got, ok, err := s.Workload(w.UID)
			w.ObjectUID = got.ObjectUID // assigned by the store: TestObjectUIDs
			if err != nil || !ok || !reflect.DeepEqual(got, w) {
				t.Fatalf("Workload(%s) = %#v, %v, %v; want %#v", w.UID, got, ok, err, w)
			}
		}
		if got, ok, err := s.Workload("missing"); err != nil || ok || !reflect.DeepEqual(got, Workload{}) {
			t.Fatalf("Workload(missing) = %#v, %v, %v", got, ok, err)
		}
	})
}

func TestVolumesAndNodes(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		must(t, s.Apply([]Op{
			{PutVolume: &VolumeSpec{ID: "v3"}},
			{PutVolume: &VolumeSpec{ID: "v1", Mode: cloud.MultiNode}},
			{PutVolume: &VolumeSpec{ID: "v2"}},
			{PutVolume: &VolumeSpec{ID: "v4", Mode: cloud.MultiNode, ReadOnly: true}},
			{PutNode: &NodeSpec{Name: "n2"}},
			{PutNode: &NodeSpec{Name: "n1"}},
		}))
		must(t, s.PutVolume(VolumeSpec{ID: "v3", Mode: cloud.MultiNode}))
		must(t, s.DeleteVolume("v2"))
		must(t, s.PutNode(NodeSpec{Name: "n3"}))
		must(t, s.DeleteNode("n2"))
		vols, err := s.Volumes()
		must(t, err)
		nodes, err := s.Nodes()
		must(t, err)
		clearUIDs(vols, nodes) // TestObjectUIDs checks them
		want := []VolumeSpec{{ID: "v1", Mode: cloud.MultiNode}, {ID: "v3", Mode: cloud.MultiNode}, {ID: "v4", Mode: cloud.MultiNode, ReadOnly: true}}
		if !reflect.DeepEqual(vols, want) {
			t.Fatalf("Volumes = %v, want %v", vols, want)
		}
		if want := []NodeSpec{{Name: "n1"}, {Name: "n3"}}; !reflect.DeepEqual(nodes, want) {
			t.Fatalf("Nodes = %v, want %v", nodes, want)
		}
		if v, ok, err := s.Volume("v1"); err != nil || !ok || v.Mode != cloud.MultiNode || v.ReadOnly {
			t.Fatalf("Volume(v1) = %v, %v, %v", v, ok, err)
		}
		if v, ok, err := s.Volume("v4"); err != nil || !ok || v.Mode != cloud.MultiNode || !v.ReadOnly {
			t.Fatalf("Volume(v4) = %v, %v, %v; want ReadOnlyMany", v, ok, err)
		}
		if v, ok, err := s.Volume("v2"); err != nil || ok || !reflect.DeepEqual(v, VolumeSpec{}) {
			t.Fatalf("Volume(v2) = %v, %v, %v; want deleted", v, ok, err)
		}
		if n, ok, err := s.Node("n3"); err != nil || !ok || n.Name != "n3" {
			t.Fatalf("Node(n3) = %v, %v, %v", n, ok, err)
		}
		if _, ok, err := s.Node("n2"); err != nil || ok {
			t.Fatalf("Node(n2) = %v, %v; want deleted", ok, err)
		}
	})
}

// TestConcurrentWrites: writers and readers at once; every write counts
// once and every workload gets its own Seq.
func TestConcurrentWrites(t *testing.T) {
	const writers, each = 4, 10
	forEach(t, func(t *testing.T, s testStore) {
		done := make(chan error, writers)
		for g := range writers {
			go func() {
				var err error
				for i := range each {
					err = errors.Join(err, s.PutWorkload(Workload{UID: fmt.Sprintf("w%d-%d", g, i), Node: "n1", Volumes: []cloud.VolumeID{"v1"}}))
					_, rerr := s.DesiredNodes("v1")
					err = errors.Join(err, rerr)
				}
				done <- err
			}()
		}
		for range writers {
			must(t, <-done)
		}
		ws, err := s.Workloads()
		must(t, err)
		for i, w := range ws {
			if w.Seq != uint64(i+1) {
				t.Fatalf("workload %d has Seq %d; want Seqs 1..%d", i, w.Seq, writers*each)
			}
		}
		if rev, _ := s.Revision(); rev != writers*each || len(ws) != writers*each {
			t.Fatalf("Revision %d, %d workloads; want %d each", rev, len(ws), writers*each)
		}
	})
}

func clearUIDs(vols []VolumeSpec, nodes []NodeSpec) {
	for i := range vols {
		vols[i].ObjectUID = ""
	}
	for i := range nodes {
		nodes[i].ObjectUID = ""
	}
}

// TestVolumesOf: the volumes named that exist, as Volume reads each,
// missing and repeated names aside; more names than one etcd
// transaction may read (MaxTxnOps) take several, at one revision.
func TestVolumesOf(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		const n = 300
		var ops []Op
		var ids []cloud.VolumeID
		for i := range n {
			v := VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%03d", i))}
			if i%7 == 0 {
				v.Mode, v.ReadOnly = cloud.MultiNode, true
			}
			ops = append(ops, Op{PutVolume: &v})
			ids = append(ids, v.ID)
		}
		must(t, s.Apply(ops))
		must(t, s.DeleteVolume("v005"))
		ask := append(append([]cloud.VolumeID{"missing"}, ids...), "v001")
		got, err := s.VolumesOf(ask)
		must(t, err)
		if len(got) != n-1 {
			t.Fatalf("VolumesOf found %d volumes, want %d", len(got), n-1)
		}
		for _, id := range ids {
			want, ok, err := s.Volume(id)
			must(t, err)
			v, found := got[id]
			if found != ok || !reflect.DeepEqual(v, want) {
				t.Fatalf("VolumesOf[%s] = %+v (found %v), Volume = %+v (found %v)", id, v, found, want, ok)
			}
		}
		if _, ok := got["missing"]; ok {
			t.Fatal("VolumesOf found a volume never written")
		}
		if got, err := s.VolumesOf(nil); err != nil || len(got) != 0 {
			t.Fatalf("VolumesOf(nil) = %v, %v; want nothing", got, err)
		}
	})
}
