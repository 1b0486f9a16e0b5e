package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// A controller restart with V volumes on N nodes asks the cloud
// ceil(N / batch size) times in all (one pass of the verifier for the whole
// restore, not one call per volume), and attaches and detaches nothing when
// nothing changed.
func TestRestartVerifiesOncePerBatchOfNodes(t *testing.T) {
	for _, tc := range []struct{ vols, nodes, batch int }{{30, 7, 2}, {60, 12, 5}, {40, 4, 50}} {
		t.Run(fmt.Sprintf("V%d_N%d_batch%d", tc.vols, tc.nodes, tc.batch), func(t *testing.T) {
			r := newRig(t, func(c *Config, s *sim.Config) {
				s.BatchSize = tc.batch
				c.Node.NotReadyAfter = 24 * time.Hour
			})
			var nodes []cloud.NodeName
			for i := 1; i <= tc.nodes; i++ {
				nodes = append(nodes, cloud.NodeName(fmt.Sprintf("n%02d", i)))
			}
			r.node(nodes...)
			vols := make([]cloud.VolumeID, tc.vols)
			for i := range vols {
				vols[i] = cloud.VolumeID(fmt.Sprintf("v%03d", i))
				r.volume(vols[i], cloud.Exclusive)
				r.workload(fmt.Sprintf("w%03d", i), nodes[i%tc.nodes], vols[i])
			}
			for i, v := range vols {
				r.eventually("attached", r.settled(v, nodes[i%tc.nodes]))
			}
			must(t, r.ctl.Stop(5*time.Second))
			r.clk.Advance(time.Second) // the restart comes after the replies

			before := r.cloud.Calls()
			r.ctl = New(r.sys, r.cfg, r.calls, r.store, r.rec)
			must(t, r.ctl.Start())
			for i, v := range vols {
				r.eventually("restored and attached", r.settled(v, nodes[i%tc.nodes]))
			}
			after := r.cloud.Calls()
			want := (tc.nodes + tc.batch - 1) / tc.batch
			if got := after.Calls[sim.MethodVolumesAreAttached] - before.Calls[sim.MethodVolumesAreAttached]; got != want {
				t.Errorf("restart made %d verify calls, want ceil(%d/%d) = %d", got, tc.nodes, tc.batch, want)
			}
			for _, m := range []sim.Method{sim.MethodAttach, sim.MethodDetach, sim.MethodInstanceVolumes} {
				if got := after.Calls[m] - before.Calls[m]; got != 0 {
					t.Errorf("restart made %d %s calls with nothing changed, want 0", got, m)
				}
			}
		})
	}
}
