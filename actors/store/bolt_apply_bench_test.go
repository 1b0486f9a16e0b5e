package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tether/tether/cloud"
)

// BenchmarkApplyWorkloads: one Apply of V volumes and V workloads over V/10
// nodes (a fleet's first apply), on a fresh store. ns/workload should not
// grow with V: compare the sizes of one run.
func BenchmarkApplyWorkloads(b *testing.B) {
	for _, v := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("V=%d", v), func(b *testing.B) {
			ops := fleetOps(v, v/10)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				st, err := CreateBolt(filepath.Join(b.TempDir(), "tether.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := st.Apply(ops); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*v), "ns/workload")
		})
	}
}

// fleetOps puts v volumes and v workloads (one volume each) over nodes
// nodes, n1..n<nodes>, in one list: a fleet's first apply.
func fleetOps(v, nodes int) []Op {
	var ops []Op
	for i := range nodes {
		ops = append(ops, Op{PutNode: &NodeSpec{Name: cloud.NodeName(fmt.Sprintf("n%d", i+1))}})
	}
	for i := range v {
		ops = append(ops, Op{PutVolume: &VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%06d", i))}})
	}
	for i := range v {
		ops = append(ops, Op{PutWorkload: &Workload{UID: fmt.Sprintf("w%06d", i), Node: cloud.NodeName(fmt.Sprintf("n%d", i%nodes+1)),
			Volumes: []cloud.VolumeID{cloud.VolumeID(fmt.Sprintf("v%06d", i))}}})
	}
	return ops
}
