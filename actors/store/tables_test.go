package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// fillRandom writes seeded random workloads, statuses, volumes (some
// deleted) and intents, among them volumes whose IDs prefix each other's
// (an intent key range must not spill into the next volume's).
func fillRandom(t *testing.T, s Store, seed uint64) []cloud.VolumeID {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	vols := []cloud.VolumeID{"v0", "v1", "v10", "v2", "v3", "v4"}
	nodes := []cloud.NodeName{"n0", "n1", "n2", "n3"}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 40 {
		ops, st := randomIndexStep(rng, vols, nodes)
		v := vols[rng.IntN(len(vols))]
		if rng.IntN(4) == 0 {
			ops = append(ops, Op{DeleteVolume: v})
		} else {
			ops = append(ops, Op{PutVolume: &VolumeSpec{ID: v, Mode: cloud.AccessMode(rng.IntN(2))}})
		}
		must(t, s.Apply(ops))
		must(t, s.PutNodeStatus(st))
		in := Intent{Volume: vols[rng.IntN(len(vols))], Node: nodes[rng.IntN(len(nodes))], Op: uint64(step),
			Attach: rng.IntN(2) == 0, Deadline: at.Add(time.Duration(step) * time.Second)}
		must(t, s.PutIntent(in))
	}
	return append(vols, "ghost")
}

// AllIntents lists, for every volume, exactly what Intents lists, and no
// volume without intents.
func TestAllIntentsMatchesIntents(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		bulk, ok := s.(BulkIntents)
		if !ok {
			t.Skip("no bulk intent read")
		}
		for seed := uint64(1); seed <= 3; seed++ {
			vols := fillRandom(t, s, seed)
			all, err := bulk.AllIntents()
			must(t, err)
			for _, v := range vols {
				want, err := s.Intents(v)
				must(t, err)
				if !reflect.DeepEqual(all[v], want) && len(all[v])+len(want) > 0 {
					t.Fatalf("seed %d, volume %s: AllIntents %+v, Intents %+v", seed, v, all[v], want)
				}
			}
			for v, ins := range all {
				if !slices.Contains(vols, v) || len(ins) == 0 {
					t.Fatalf("seed %d: AllIntents lists volume %q with %d intents", seed, v, len(ins))
				}
			}
		}
	})
}

// ReadTables is what the table-by-table reads give, Revision first.
func TestReadTablesMatchesReads(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		r, ok := s.(TableReader)
		if !ok {
			t.Skip("no whole-store read")
		}
		for seed := uint64(1); seed <= 3; seed++ {
			fillRandom(t, s, seed)
			got, err := r.ReadTables()
			must(t, err)
			var want Tables
			want.Revision, err = s.Revision()
			must(t, err)
			want.Volumes, err = s.Volumes()
			must(t, err)
			want.Workloads, err = s.Workloads()
			must(t, err)
			want.Statuses, err = s.NodeStatuses()
			must(t, err)
			want.Intents, err = s.(BulkIntents).AllIntents()
			must(t, err)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d:\nReadTables %s\nreads      %s", seed, fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want))
			}
		}
	})
}
