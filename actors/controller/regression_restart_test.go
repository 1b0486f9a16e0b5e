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
