package controller

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

func detaches(r *rig) int { return r.cloud.Calls().Calls[sim.MethodDetach] }

func TestDetachWaitsWhileInUse(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.NotReadyAfter = 24 * time.Hour })
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.inUse("n1", "v1")
	must(t, r.ctl.DeleteWorkload("w1"))
	for i := 0; i < 10; i++ { // an hour on a Ready node: never force detached
		r.clk.Advance(6 * time.Minute)
		if got := r.volState("v1", "n1"); got != "Attached" || detaches(r) != 0 {
			t.Fatalf("after %d min: state %s, %d detach calls; want Attached and none while in use", (i+1)*6, got, detaches(r))
		}
	}
	r.inUse("n1")
	r.eventually("detached once unused", r.settled("v1"))
	if got := len(r.events("v1", "ForceDetach")); got != 0 {
		t.Fatalf("ForceDetach events = %d, want 0", got)
	}
}

func TestForceDetachAfterMaxWaitOnNotReadyNode(t *testing.T) {
	r := newRig(t)
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.inUse("n1", "v1")
	// n2 stays Ready; n1's agent falls silent.
	r.ctl.Heartbeat("n2")
	r.clk.Advance(40 * time.Second)
	r.eventually("n1 NotReady", func() bool {
		st, err := r.ctl.NodeStatus("n1", time.Second)
		return err == nil && !st.Ready
	})
	r.workload("w1", "n2", "v1") // the workload moves away from the dead node
	r.eventually("Multi-Attach for n2", func() bool { return len(r.events("v1", "Multi-Attach")) == 1 })
	r.clk.Advance(6*time.Minute - time.Second)
	if got := r.volState("v1", "n1"); got != "Attached" || detaches(r) != 0 {
		t.Fatalf("before maxWaitForUnmount: state %s, %d detaches", got, detaches(r))
	}
	r.clk.Advance(time.Second)
	r.eventually("force detached and attached to n2", r.settled("v1", "n2"))
	ev := r.events("v1", "ForceDetach")
	if len(ev) != 1 || ev[0].Node != "n1" {
		t.Fatalf("ForceDetach events = %+v, want one for n1", ev)
	}
}

func TestForceDetachDisabled(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Volume.DisableForceDetach = true })
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.inUse("n1", "v1")
	r.clk.Advance(40 * time.Second)
	r.eventually("n1 NotReady", func() bool {
		st, err := r.ctl.NodeStatus("n1", time.Second)
		return err == nil && !st.Ready
	})
	must(t, r.ctl.DeleteWorkload("w1"))
	r.clk.Advance(time.Hour)
	if got := r.volState("v1", "n1"); got != "Attached" || detaches(r) != 0 {
		t.Fatalf("force detach disabled: state %s, %d detaches", got, detaches(r))
	}
}

func TestOutOfServiceDetachesImmediately(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.NotReadyAfter = 24 * time.Hour })
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.inUse("n1", "v1")
	r.workload("w1", "n2", "v1")
	if got := r.volState("v1", "n1"); got != "Attached" {
		t.Fatalf("state %s, want Attached while in use on a Ready node", got)
	}
	r.ctl.SetOutOfService("n1", true)
	r.eventually("moved to n2 at once", r.settled("v1", "n2"))
	if ev := r.events("v1", "ForceDetach"); len(ev) != 1 {
		t.Fatalf("ForceDetach events = %+v, want 1", ev)
	}
}

// I4: the node status is persisted without the volume before the detach;
// when that write fails, no detach happens.
func TestNoDetachWhenStatusCannotBePersisted(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.store.FailNodeStatusWrites(1)
	must(t, r.ctl.DeleteWorkload("w1"))
	r.eventually("FailedDetachVolume", func() bool { return len(r.events("v1", "FailedDetachVolume")) == 1 })
	if detaches(r) != 0 || !r.reported("n1", "v1") {
		t.Fatalf("after a failed status write: %d detaches, reported=%v; want none and still reported; events:%s", detaches(r), r.reported("n1", "v1"), r.eventLog())
	}
	if st, _, _ := r.store.NodeStatus("n1"); st.VolumesAttached["v1"] == "" {
		t.Fatal("persisted status lost v1 although the write failed")
	}
	r.clk.Advance(500 * time.Millisecond)
	r.eventually("detached on retry", r.settled("v1"))
	if st, _, _ := r.store.NodeStatus("n1"); len(st.VolumesAttached) != 0 {
		t.Fatalf("persisted status still lists %v", st.VolumesAttached)
	}
}
