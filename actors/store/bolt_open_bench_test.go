package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// BenchmarkOpenBolt: OpenBolt of a fleet's store (V volumes and
// workloads, V/10 nodes, every node's status with its 10 volumes
// attached), as a restart opens it. "verify" is the check alone; compare
// it with "open" (the check and everything else) across the sizes of one
// run:
//
//	go test -run '^$' -bench OpenBolt -benchtime 3x ./actors/store
func BenchmarkOpenBolt(b *testing.B) {
	for _, v := range []int{10_000, 100_000} {
		path := fleetStore(b, v)
		b.Run(fmt.Sprintf("V=%d/verify", v), func(b *testing.B) {
			for range b.N {
				if err := verify(path, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*v), "ns/volume")
		})
		b.Run(fmt.Sprintf("V=%d/open", v), func(b *testing.B) {
			for range b.N {
				st, err := OpenBolt(path)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*v), "ns/volume")
		})
	}
}

// fleetStore writes a store of v volumes and workloads over v/10 nodes,
// each node's status holding its volumes attached and in use.
func fleetStore(b *testing.B, v int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "tether.db")
	st, err := CreateBolt(path)
	if err != nil {
		b.Fatal(err)
	}
	nodes := v / 10
	ops := fleetOps(v, nodes)
	if err := st.Apply(ops); err != nil {
		b.Fatal(err)
	}
	for n := range nodes {
		s := nodestatus.Status{Name: cloud.NodeName(fmt.Sprintf("n%d", n+1)), VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{}}
		for i := n; i < v; i += nodes {
			id := cloud.VolumeID(fmt.Sprintf("v%06d", i))
			s.VolumesAttached[id] = "/dev/xvdb"
			s.VolumesInUse[id] = true
		}
		if err := st.PutNodeStatus(s); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}
