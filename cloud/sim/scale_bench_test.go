package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tether/tether/cloud"
)

// benchState writes a state file holding vols volumes, one in 25 attached
// (to instances of 25 attachments at most), and returns its path.
func benchState(b *testing.B, vols int) string {
	b.Helper()
	st := &state{Version: 1}
	for i := range vols {
		st.Volumes = append(st.Volumes, stateVolume{ID: cloud.VolumeID(fmt.Sprintf("v%06d", i)), Mode: stateMode(cloud.Exclusive)})
	}
	for i := range vols / 25 {
		si := stateInstance{ID: cloud.InstanceID(fmt.Sprintf("i-n%d-%d", i, i+1)), Node: cloud.NodeName(fmt.Sprint("n", i)), Running: true, AttachLimit: 39,
			Devices: map[cloud.VolumeID]string{}}
		for j := range 25 {
			si.Devices[cloud.VolumeID(fmt.Sprintf("v%06d", i*25+j))] = fmt.Sprintf("/dev/xvd%c%c", 'b'+j/26, 'a'+j%26)
		}
		st.Instances = append(st.Instances, si)
	}
	st.Seq = len(st.Instances)
	path := filepath.Join(b.TempDir(), "cloud.json")
	data, err := jsonMarshal(st)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := writeFileAtomic(path, data, new(atomic.Int64)); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkStateConcurrentChanges: 64 goroutines attach and detach, each
// its own volume on its own instance, on a durable cloud of 1,000 and
// 100,000 volumes. One op is one change (an attach or a detach).
func BenchmarkStateConcurrentChanges(b *testing.B) {
	const workers = 64
	for _, vols := range []int{1000, 100000} {
		b.Run(fmt.Sprint(vols, "vols"), func(b *testing.B) {
			c := mustOpenB(b, Config{StatePath: benchState(b, vols)})
			ctx := context.Background()
			insts := make([]cloud.InstanceID, workers)
			for w := range workers {
				insts[w] = c.AddInstance(cloud.NodeName(fmt.Sprint("bench", w)))
				c.CreateVolume(cloud.VolumeID(fmt.Sprint("bench", w)), cloud.Exclusive)
			}
			fsyncs := c.Fsyncs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range workers {
				n := b.N / workers
				if w < b.N%workers {
					n++
				}
				wg.Go(func() {
					vol := cloud.VolumeID(fmt.Sprint("bench", w))
					for i := range n {
						var err error
						if i%2 == 0 {
							_, err = c.Attach(ctx, vol, insts[w])
						} else {
							err = c.Detach(ctx, vol, insts[w])
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(c.Fsyncs()-fsyncs)/float64(b.N), "fsyncs/op")
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkChangeAfterBulkCreate: one goroutine attaches and detaches one
// volume on a durable cloud whose volumes (1,000 or 100,000) and instances
// (one per 10 volumes) were each created in one bulk commit, as an apply
// and a fleet's start create them. One op is one change, written to the
// log without its fsync (which would hide the rest). A change must not
// cost more after a larger bulk create: the dirty sets of those commits
// once kept their slots, and every later commit ranged over them.
func BenchmarkChangeAfterBulkCreate(b *testing.B) {
	for _, vols := range []int{1000, 100000} {
		b.Run(fmt.Sprint(vols, "vols"), func(b *testing.B) {
			c := mustOpenB(b, Config{StatePath: filepath.Join(b.TempDir(), "cloud.json")})
			specs := make([]cloud.VolumeSpec, vols)
			for i := range specs {
				specs[i] = cloud.VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%06d", i)), Mode: cloud.Exclusive}
			}
			if err := c.CreateVolumesUncommitted(specs); err != nil {
				b.Fatal(err)
			}
			nodes := make([]cloud.NodeName, vols/10)
			for i := range nodes {
				nodes[i] = cloud.NodeName(fmt.Sprintf("n%05d", i))
			}
			insts, err := c.AddInstances(nodes)
			if err != nil {
				b.Fatal(err)
			}
			setAppend(c, func(f *os.File, data []byte) error {
				_, err := f.Write(data)
				return err
			})
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				var err error
				if i%2 == 0 {
					_, err = c.Attach(ctx, "v000000", insts[0])
				} else {
					err = c.Detach(ctx, "v000000", insts[0])
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
