package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// TestRestartResolvesNodesInBatches: a restarted controller resolves its
// nodes in ceil(nodes / batch) InstanceIDs calls where the cloud has the
// call, none one by one; where it says it cannot, one by one.
func TestRestartResolvesNodesInBatches(t *testing.T) {
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			r := newRig(t, func(c *Config, s *sim.Config) { s.BatchSize = 4; c.Node.NotReadyAfter = 24 * time.Hour })
			var vols []cloud.VolumeID
			for i := range 10 {
				n, v := cloud.NodeName(fmt.Sprintf("n%d", i)), cloud.VolumeID(fmt.Sprintf("v%d", i))
				r.node(n)
				r.volume(v, cloud.Exclusive)
				r.workload(fmt.Sprintf("w%d", i), n, v)
				vols = append(vols, v)
			}
			r.eventually("attached", func() bool {
				for i, v := range vols {
					if !r.settled(v, cloud.NodeName(fmt.Sprintf("n%d", i)))() {
						return false
					}
				}
				return true
			})
			must(t, r.ctl.Stop(5*time.Second))
			r.calls.batched.Store(batched)
			before := r.cloud.Calls().Calls
			r.ctl = New(r.sys, r.cfg, r.calls, r.store, r.rec)
			must(t, r.ctl.Start())
			r.eventually("restored", r.ctl.Restored)
			after := r.cloud.Calls().Calls
			ids, id := after[sim.MethodInstanceIDs]-before[sim.MethodInstanceIDs], after[sim.MethodInstanceID]-before[sim.MethodInstanceID]
			if batched && (ids != 3 || id != 0) {
				t.Fatalf("%d instance_ids and %d instance_id calls for 10 nodes in batches of 4, want 3 and 0", ids, id)
			}
			if !batched && (ids != 0 || id != 10) {
				t.Fatalf("%d instance_ids and %d instance_id calls for 10 nodes one by one, want 0 and 10", ids, id)
			}
		})
	}
}
