package controller

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// Regression (found in review): a volume actor restarted while its
// CallDetach is in flight must not report the volume attached on that node
// until the old call has certainly ended: otherwise the node mounts it and
// the old detach lands under the mount (I2, I3). The node status remembers
// the prepared detach (VolumesDetaching) and the new incarnation fences the
// node for CloudTimeout.
func TestRegressionRestartDuringDetach(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.NotReadyAfter = 24 * time.Hour })
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))

	r.cloud.SetLatency(1500 * time.Millisecond) // the detach call is slow
	must(t, r.ctl.DeleteWorkload("w1"))
	r.eventually("detach in flight", func() bool { return detaches(r) == 1 })
	r.cloud.SetLatency(0)

	r.sys.Root.Send(r.pid(volumePrefix+"v1"), &messages.Crash{Reason: "review"})
	r.eventually("restart scheduled", func() bool { return len(r.restartDelays()) == 1 })
	r.workload("w1", "n1", "v1") // wanted again while the actor is down
	r.clk.Advance(r.restartDelays()[0])
	r.eventually("rebuilt", func() bool {
		st, err := r.ctl.VolumeStatus("v1", time.Second)
		return err == nil && st.Restored
	})
	if got := r.volState("v1", "n1"); got != "Uncertain" || r.reported("n1", "v1") {
		t.Fatalf("inside the fence: state %s, reported %v; want Uncertain and not reported", got, r.reported("n1", "v1"))
	}
	r.clk.Advance(r.cfg.CloudTimeout)
	r.eventually("attached and reported after the fence", r.settled("v1", "n1"))
	r.mu.Lock()
	mark := len(r.changes)
	r.mu.Unlock()
	r.inUse("n1", "v1")
	r.clk.Advance(time.Hour)
	r.volState("v1", "n1")
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.changes[mark:] {
		if c.Volume == "v1" && !c.Attached {
			t.Fatalf("I2: v1 detached from n1 (%s) while n1 reports it in use", c.Reason)
		}
	}
}

// Regression (distributed chaos): a member killed in the middle of a
// repeated attach left the first attach's device in the node status while
// the cloud had the volume at another; nothing compared device paths, so the
// agent was told the wrong device for good. A sync pass now finds the
// difference and the cloud's device replaces the recorded one.
func TestRegressionStaleDevicePathIsCorrected(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.NotReadyAfter = 24 * time.Hour })
	passes := r.passes()
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	inst, _ := r.cloud.InstanceOf("n1")
	real := r.cloud.Attachments()["v1"]
	if len(real) != 1 || real[0] != inst {
		t.Fatalf("cloud attachments of v1 = %v, want [%s]", real, inst)
	}
	got, err := r.cloud.InstanceVolumes(t.Context(), []cloud.InstanceID{inst})
	must(t, err)
	dev := got[inst]["v1"]

	// The node actor restarts from a status that names another device.
	st, _, err := r.store.NodeStatus("n1")
	must(t, err)
	st.VolumesAttached["v1"] = "/dev/stale"
	must(t, r.store.PutNodeStatus(st))
	r.sys.Root.Send(r.pid(nodePrefix+"n1"), &messages.Crash{Reason: "test"})
	r.eventually("restart scheduled", func() bool { return len(r.restartDelays()) == 1 })
	r.clk.Advance(r.restartDelays()[0])
	device := func() string {
		st, err := r.ctl.NodeStatus("n1", 5*time.Second)
		must(t, err)
		for _, a := range st.VolumesAttached {
			if a.VolumeId == "v1" {
				return a.DevicePath
			}
		}
		return ""
	}
	r.eventually("restarted with the stale device", func() bool { return device() == "/dev/stale" })

	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 1 })
	if p := passes()[0]; p.Moved != 1 || p.Lost != 0 || p.Dangling != 0 {
		t.Fatalf("pass: moved %d lost %d dangling %d, want 1 0 0", p.Moved, p.Lost, p.Dangling)
	}
	r.eventually("the cloud's device "+dev+" recorded", func() bool {
		st, _, err := r.store.NodeStatus("n1")
		return err == nil && st.VolumesAttached["v1"] == dev && device() == dev
	})
	if changes := r.cloud.Attachments()["v1"]; len(changes) != 1 || changes[0] != inst {
		t.Fatalf("v1 attached to %v after the correction, want only %s", changes, inst)
	}
}
