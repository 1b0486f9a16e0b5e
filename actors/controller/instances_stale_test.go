package controller

import (
	"context"
	"testing"
	"time"

	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// A member's cache names a node's previous instance: the machine was
// replaced, and another member (its own cache fresh) attached a volume to
// the new one. The verifier and the sync pass must report the node's
// attachments, not the old instance's "nothing": chaos --distributed
// found a volume attached twice when they did (I1). A node whose instance
// is gone with no successor still has nothing attached.
func TestStaleInstanceIsNotTheNodesTruth(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replace  bool // replaced and v attached to the new instance; else the instance deleted
		attached bool
	}{
		{"replaced, attached to the new instance", true, true},
		{"deleted, no successor", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sim.New(sim.Config{BatchSize: 10})
			t.Cleanup(func() { _ = c.Close() })
			old := c.AddInstance("n1")
			c.AddInstance("n2")
			c.CreateVolume("v", cloud.Exclusive)
			e := &env{ctx: context.Background(), cloud: c, inst: newInstances(c), clock: clock.Real()}
			e.cfg.CloudTimeout = 10 * time.Second
			// This member resolved n1 earlier: its cache holds old.
			if got := e.inst.resolveAll(e.ctx, []cloud.NodeName{"n1", "n2"}); got["n1"].inst != old {
				t.Fatalf("resolved n1 to %v, want %s", got["n1"], old)
			}
			if tc.replace {
				now, err := c.Replace("n1")
				must(t, err)
				if _, err := c.Attach(e.ctx, "v", now); err != nil {
					t.Fatal(err)
				}
			} else {
				must(t, c.Delete(old))
			}

			v := newVerifier(e)
			got, bad := v.verifyBatch([]cloud.NodeName{"n1", "n2"}, map[cloud.NodeName]map[cloud.VolumeID]bool{"n1": {"v": true}, "n2": {"v": true}})
			if len(bad) > 0 {
				t.Fatalf("verify failed: %v", bad)
			}
			if got["n1"]["v"] != tc.attached || got["n2"]["v"] {
				t.Errorf("verify says v attached to n1 %v and to n2 %v, want %v and false", got["n1"]["v"], got["n2"]["v"], tc.attached)
			}

			// The sync pass, from a cache as stale.
			e.inst = newInstances(c)
			e.inst.m["n1"] = old
			res := &messages.SyncBatchFinished{Actual: map[string]*messages.NodeVolumes{}}
			listBatch(e.ctx, e, []cloud.NodeName{"n1", "n2"}, res)
			if len(res.FailedNodes) > 0 {
				t.Fatalf("sync failed: %v %s", res.FailedNodes, res.Error)
			}
			nv, ok := res.Actual["n1"]
			if !ok {
				t.Fatal("sync reported nothing for n1")
			}
			if _, has := nv.GetVolumes()["v"]; has != tc.attached {
				t.Errorf("sync lists n1 with %v, want v attached %v", nv.GetVolumes(), tc.attached)
			}
		})
	}
}
