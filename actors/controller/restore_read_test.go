package controller

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/store/etcdserver/etcdtest"
	"github.com/tether/tether/cloud"
)

// fillVaried writes seeded random content: volumes of every access mode,
// some deleted (and still named by workloads, statuses or intents);
// workloads of several volumes each, replaced (keeping their Seq, on
// another node) and deleted, so that Seq order is neither name nor node
// order; node statuses listing volumes attached, in use, detaching (and
// false entries, which list nothing), Ready or not, out of service; and
// intents. It returns every volume named, and one named nowhere.
func fillVaried(t *testing.T, st store.Store, seed uint64) []cloud.VolumeID {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	nodes := []cloud.NodeName{"a", "b", "c", "d", "e"}
	vols := []cloud.VolumeID{"v0", "v1", "v10", "v2", "v3", "v4", "v5", "v6"}
	putDesired(t, st, rng, nodes, vols, 10, false)
	for range 2 {
		must(t, st.DeleteVolume(vols[rng.IntN(len(vols))]))
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range nodes[:4] {
		s := nodestatus.Status{Name: n, Ready: rng.IntN(3) > 0, OutOfService: rng.IntN(4) == 0, InUseSeq: rng.Uint64N(9),
			VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{}, VolumesDetaching: map[cloud.VolumeID]bool{}}
		if !s.Ready {
			s.NotReadySince = at.Add(-time.Duration(rng.IntN(100)) * time.Second)
		}
		for _, v := range vols {
			switch rng.IntN(6) {
			case 0:
				s.VolumesAttached[v] = "/dev/" + string(v)
			case 1:
				s.VolumesAttached[v] = "/dev/" + string(v)
				s.VolumesInUse[v] = true
			case 2:
				s.VolumesDetaching[v] = true
				s.VolumesInUse[v] = rng.IntN(2) == 0
			case 3:
				s.VolumesInUse[v] = rng.IntN(2) == 0
				s.VolumesDetaching[v] = false
			}
		}
		must(t, st.PutNodeStatus(s))
	}
	for i := range 12 {
		in := store.Intent{Volume: vols[rng.IntN(len(vols))], Node: nodes[rng.IntN(len(nodes))], Op: uint64(i),
			Attach: rng.IntN(2) == 0, Deadline: at.Add(time.Duration(i) * time.Second)}
		must(t, st.PutIntent(in))
	}
	return append(vols, "nowhere")
}

// Stores that hide the bulk reads, for ReadVolumes' fallbacks: tables
// read one by one with AllIntents, or with Intents per volume.
type (
	noTableReader struct {
		store.Store
		store.BulkIntents
	}
	noBulkReads struct{ store.Store }
)

// ReadVolumes gives every volume exactly ReadVolume's snapshot, on every
// store and through each of its fallbacks.
func TestReadVolumesMatchesReadVolume(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return store.NewMemory() }},
		{"bolt", func(t *testing.T) store.Store {
			b, err := store.CreateBolt(filepath.Join(t.TempDir(), "tether.db"))
			must(t, err)
			t.Cleanup(func() { must(t, b.Close()) })
			return b
		}},
		{"memory, table by table", func(*testing.T) store.Store { m := store.NewMemory(); return noTableReader{m, m} }},
		{"memory, intents per volume", func(*testing.T) store.Store { return noBulkReads{store.NewMemory()} }},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for seed := uint64(1); seed <= 8; seed++ {
				st := sc.open(t)
				ids := fillVaried(t, st, seed)
				bulk, err := ReadVolumes(st, ids)
				must(t, err)
				if len(bulk) != len(ids) {
					t.Fatalf("seed %d: %d snapshots for %d volumes", seed, len(bulk), len(ids))
				}
				for _, id := range ids {
					want, err := ReadVolume(st, id)
					must(t, err)
					if got := bulk[id]; !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d, volume %s:\nbulk %+v\none  %+v", seed, id, got, want)
					}
					covered(seen, want)
				}
			}
			for _, c := range []string{"deleted", "multi-node", "2+ desired", "listed on 2+", "detaching", "in use", "in flight", "not ready", "nothing"} {
				if !seen[c] {
					t.Errorf("no snapshot had %s: the content is not varied enough", c)
				}
			}
		})
	}
}

// covered notes which cases snap exercises.
func covered(seen map[string]bool, snap VolumeSnapshot) {
	r := snap.Restored
	inUse, notReady := false, false
	for _, n := range r.Nodes {
		inUse = inUse || n.InUse
		notReady = notReady || !n.Ready
	}
	for c, ok := range map[string]bool{
		"deleted": snap.Deleted, "multi-node": r.Mode == cloud.MultiNode,
		"2+ desired": len(r.Desired) > 1, "listed on 2+": len(r.Listed) > 1, "detaching": len(r.Detaching) > 0,
		"in use": inUse, "in flight": len(r.InFlight) > 0, "not ready": notReady, "nothing": len(snap.Candidates) == 0,
	} {
		seen[c] = seen[c] || ok
	}
}

// perRead hides a store's one-read VolumeReader: ReadVolume then makes
// its five reads.
type perRead struct{ store.Store }

// ReadVolume's one read (store.VolumeReader: Bolt's one transaction,
// etcd's one read of its cache, or its five reads in order without one)
// gives what its five reads through the Store give.
func TestReadVolumeOneReadMatchesFive(t *testing.T) {
	etcd := etcdtest.Start(t)
	stores := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"bolt", func(t *testing.T) store.Store {
			b, err := store.CreateBolt(filepath.Join(t.TempDir(), "tether.db"))
			must(t, err)
			t.Cleanup(func() { must(t, b.Close()) })
			return b
		}},
		{"etcd", func(t *testing.T) store.Store { return openTestEtcd(t, etcd.Endpoints(), false) }},
		{"etcd-cached", func(t *testing.T) store.Store { return openTestEtcd(t, etcd.Endpoints(), true) }},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for seed := uint64(1); seed <= 8; seed++ {
				st := sc.open(t)
				if _, ok := st.(store.VolumeReader); !ok {
					t.Fatalf("%s does not read a volume in one read", sc.name)
				}
				for _, id := range fillVaried(t, st, seed) {
					one, err := ReadVolume(st, id)
					must(t, err)
					five, err := ReadVolume(perRead{st}, id)
					must(t, err)
					if !reflect.DeepEqual(one, five) {
						t.Fatalf("seed %d, volume %s:\none read   %+v\nfive reads %+v", seed, id, one, five)
					}
					covered(seen, one)
				}
			}
			for _, c := range []string{"deleted", "multi-node", "2+ desired", "listed on 2+", "detaching", "in use", "in flight", "not ready", "nothing"} {
				if !seen[c] {
					t.Errorf("no snapshot had %s: the content is not varied enough", c)
				}
			}
		})
	}
}

// openTestEtcd opens a store under a prefix of its own on endpoints,
// closed when the test ends.
func openTestEtcd(t *testing.T, endpoints []string, cache bool) *store.Etcd {
	t.Helper()
	testEtcdPrefixes++
	e, err := store.OpenEtcd(store.EtcdConfig{Endpoints: endpoints, Prefix: fmt.Sprintf("/t%d/", testEtcdPrefixes), Cache: cache})
	must(t, err)
	t.Cleanup(func() { must(t, e.Close()) })
	return e
}

var testEtcdPrefixes int
