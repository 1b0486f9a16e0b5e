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
