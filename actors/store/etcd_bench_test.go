package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// benchStores are the durable stores the benchmarks compare, in one run:
//
//	go test -run '^$' -bench 'Apply1000|PutNodeStatus' ./actors/store
var benchStores = []struct {
	name string
	open func(b *testing.B) Store
}{
	{"bolt", func(b *testing.B) Store { return openBolt(b, filepath.Join(b.TempDir(), "store.db")) }},
	{"etcd", func(b *testing.B) Store { return freshEtcd(b) }},
}

// BenchmarkApply1000: one Apply of 1,000 ops (500 volumes and 500
// workloads over 50 nodes, all new) on a store that grows with b.N.
func BenchmarkApply1000(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				ops := make([]Op, 0, 1000)
				for j := range 500 {
					vol := cloud.VolumeID(fmt.Sprintf("v%d-%03d", i, j))
					ops = append(ops, Op{PutVolume: &VolumeSpec{ID: vol}},
						Op{PutWorkload: &Workload{UID: fmt.Sprintf("w%d-%03d", i, j), Node: cloud.NodeName(fmt.Sprintf("n%02d", j%50)), Volumes: []cloud.VolumeID{vol}}})
				}
				b.StartTimer()
				if err := s.Apply(ops); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/storeop")
		})
	}
}

// BenchmarkPutNodeStatus: node actors writing their own statuses (10
// volumes each, flipping in-use), one writer and 64 at once.
func BenchmarkPutNodeStatus(b *testing.B) {
	for _, bs := range benchStores {
		for _, writers := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", bs.name, writers), func(b *testing.B) {
				s := bs.open(b)
				status := func(w, i int) nodestatus.Status {
					st := nodestatus.Status{Name: cloud.NodeName(fmt.Sprintf("n%d", w)), VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{}}
					for v := range 10 {
						id := cloud.VolumeID(fmt.Sprintf("v%d-%d", w, v))
						st.VolumesAttached[id] = "/dev/x"
						st.VolumesInUse[id] = i%2 == 0
					}
					return st
				}
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := w; i < b.N; i += writers {
							if err := s.PutNodeStatus(status(w, i/writers)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}
