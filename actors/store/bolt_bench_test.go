package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// BenchmarkNodeStatusWrites: 64 node actors each writing its own status, as
// at a fleet start. "update" is one transaction and fsync per write (the
// baseline, measured in the same run); "batch" is PutNodeStatus's group
// commit. Compare their ns/op:
//
//	go test -run '^$' -bench NodeStatusWrites ./actors/store
func BenchmarkNodeStatusWrites(b *testing.B) {
	for _, mode := range []string{"update", "batch"} {
		b.Run(mode, func(b *testing.B) {
			st, err := CreateBolt(filepath.Join(b.TempDir(), "store.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			run := st.db.Batch
			if mode == "update" {
				run = st.db.Update
			}
			const writers = 64
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := cloud.NodeName(fmt.Sprintf("n%d", w))
					for i := w; i < b.N; i += writers {
						s := nodestatus.Status{Name: name, VolumesAttached: map[cloud.VolumeID]string{cloud.VolumeID(fmt.Sprintf("v%d", i)): "/dev/x"}}
						if err := st.putNodeStatus(s, run); err != nil {
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

// BenchmarkFleetStatusWrites: the node statuses of a fleet (nodes nodes,
// 10 volumes each, every volume attached) rewritten by 1,000 node actors
// at once, each write flipping the volumes' in-use state, as in a teardown
// or a fleet start. ns/op should not grow with the fleet: compare the
// sizes of one run.
//
//	go test -run '^$' -bench FleetStatusWrites -benchtime 20000x ./actors/store
func BenchmarkFleetStatusWrites(b *testing.B) {
	for _, nodes := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			st, err := CreateBolt(filepath.Join(b.TempDir(), "store.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			status := func(n, round int) nodestatus.Status {
				s := nodestatus.Status{Name: cloud.NodeName(fmt.Sprintf("n%d", n)), VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{}}
				for v := range 10 {
					id := cloud.VolumeID(fmt.Sprintf("v%06d", v*nodes+n)) // a node's volumes spread over the key space
					s.VolumesAttached[id] = "/dev/xvd" + string(rune('a'+v))
					s.VolumesInUse[id] = round%2 == 0
				}
				return s
			}
			write := func(total int) {
				const writers = 1000
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := w; i < total; i += writers {
							if err := st.PutNodeStatus(status(i%nodes, i/nodes)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			}
			write(nodes) // every status there once
			b.ResetTimer()
			write(b.N)
		})
	}
}
