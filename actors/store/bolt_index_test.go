package store

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// lookups is everything the indexes answer, for every volume and node of
// the test's universe.
func lookups(t *testing.T, s Store, vols []cloud.VolumeID, nodes []cloud.NodeName) string {
	t.Helper()
	out := ""
	for _, v := range vols {
		dn, err := s.DesiredNodes(v)
		must(t, err)
		sts, err := s.StatusesWithVolume(v)
		must(t, err)
		var names []cloud.NodeName
		for _, st := range sts {
			names = append(names, st.Name)
		}
		out += fmt.Sprintf("%s: desired %v statuses %v\n", v, dn, names)
	}
	for _, n := range nodes {
		ws, err := s.WorkloadsOn(n)
		must(t, err)
		var uids []string
		for _, w := range ws {
			uids = append(uids, fmt.Sprintf("%s#%d", w.UID, w.Seq))
		}
		out += fmt.Sprintf("%s: workloads %v\n", n, uids)
	}
	return out
}

// randomIndexStep is a batch of seeded random puts, replaces (moving
// nodes, changing volumes) and deletes of workloads, and a status write.
func randomIndexStep(rng *rand.Rand, vols []cloud.VolumeID, nodes []cloud.NodeName) ([]Op, nodestatus.Status) {
	pick := func(n int) int { return rng.IntN(n) }
	var ops []Op
	for range 1 + pick(3) {
		uid := fmt.Sprintf("w%d", pick(8))
		switch pick(4) {
		case 0:
			ops = append(ops, Op{DeleteWorkload: uid})
		default:
			w := Workload{UID: uid, Node: nodes[pick(len(nodes))]}
			for _, v := range vols {
				if pick(3) == 0 {
					w.Volumes = append(w.Volumes, v)
				}
			}
			ops = append(ops, Op{PutWorkload: &w})
		}
	}
	st := nodestatus.Status{Name: nodes[pick(len(nodes))], VolumesAttached: map[cloud.VolumeID]string{},
		VolumesInUse: map[cloud.VolumeID]bool{}, VolumesDetaching: map[cloud.VolumeID]bool{}}
	for _, v := range vols {
		switch pick(5) {
		case 0:
			st.VolumesAttached[v] = "/dev/x"
		case 1:
			st.VolumesInUse[v] = pick(2) == 0
		case 2:
			st.VolumesDetaching[v] = pick(2) == 0
		}
	}
	return ops, st
}

// The Bolt store's indexed lookups answer what the Memory store's do,
// through seeded random puts, replaces (moving nodes, changing volumes),
// deletes and status writes, and after a reopen that rebuilds the indexes
// from scratch (a store written before they existed).
func TestBoltIndexesMatchMemory(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 1))
	vols := []cloud.VolumeID{"v0", "v1", "v2", "v3", "v4", "v5"}
	nodes := []cloud.NodeName{"n0", "n1", "n2", "n3"}
	path := filepath.Join(t.TempDir(), "store.db")
	b := openBolt(t, path)
	m := NewMemory()
	for step := 0; step < 400; step++ {
		ops, st := randomIndexStep(rng, vols, nodes)
		must(t, b.Apply(ops))
		must(t, m.Apply(ops))
		must(t, b.PutNodeStatus(st))
		must(t, m.PutNodeStatus(st))
		if got, want := lookups(t, b, vols, nodes), lookups(t, m, vols, nodes); got != want {
			t.Fatalf("seed %d, step %d: bolt\n%s\nmemory\n%s", seed, step, got, want)
		}
	}
	want := lookups(t, m, vols, nodes)
	// As a store from before the indexes: no index buckets, no version.
	must(t, b.db.Update(func(tx *bolt.Tx) error {
		for _, name := range indexBuckets {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(keyIndexes)
	}))
	must(t, b.Close())
	again, err := OpenBolt(path)
	must(t, err)
	t.Cleanup(func() { again.Close() })
	if got := lookups(t, again, vols, nodes); got != want {
		t.Fatalf("after rebuilding the indexes:\n%s\nwant\n%s", got, want)
	}
}

// A status rewritten with a volume it listed (twice: attached and in use)
// and still lists keeps its index entry; one it no longer lists loses it.
func TestBoltStatusReindexKeepsListedVolumes(t *testing.T) {
	b, err := CreateBolt(filepath.Join(t.TempDir(), "tether.db"))
	must(t, err)
	t.Cleanup(func() { _ = b.Close() })
	st := nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a", "v2": "/dev/b"},
		VolumesInUse: map[cloud.VolumeID]bool{"v1": true, "v2": true}}
	must(t, b.PutNodeStatus(st))
	st.VolumesInUse = map[cloud.VolumeID]bool{}                    // v1 stays attached
	st.VolumesAttached = map[cloud.VolumeID]string{"v1": "/dev/a"} // v2 gone
	must(t, b.PutNodeStatus(st))
	for vol, want := range map[cloud.VolumeID]int{"v1": 1, "v2": 0} {
		got, err := b.StatusesWithVolume(vol)
		must(t, err)
		if len(got) != want {
			t.Errorf("StatusesWithVolume(%s) = %d statuses, want %d", vol, len(got), want)
		}
	}
}
