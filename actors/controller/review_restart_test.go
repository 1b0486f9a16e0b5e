package controller

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// REVIEW: a volume actor restarted while its CallDetach is in flight. The
// new incarnation knows nothing of the old operation: the node status no
// longer lists the volume (prepared), the start-up verify still sees it
// attached, so it marks it Attached and reports it in VolumesAttached. The
// node mounts it (reports it in use), and then the old incarnation's detach
// lands: a volume in use on a Ready node is detached (I2), after the
// controller told the node it was attached (I3).
func TestReviewRestartDuringDetachReportsAttachedThenDetaches(t *testing.T) {
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

	r.eventually("new incarnation reports v1 attached to n1", func() bool {
		return r.volState("v1", "n1") == "Attached" && r.reported("n1", "v1")
	})
	r.mu.Lock()
	mark := len(r.changes)
	r.mu.Unlock()
	r.inUse("n1", "v1") // the node mounts what the controller reported attached
	r.eventually("old detach lands", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.changes[mark:] {
			if c.Volume == "v1" && !c.Attached && c.Reason == "detach" {
				return true
			}
		}
		return false
	})
	st, err := r.ctl.NodeStatus("n1", time.Second)
	must(t, err)
	t.Fatalf("I2/I3: v1 detached from n1 while n1 reports it in use %v (Ready=%v); the restarted actor had reported it attached", st.VolumesInUse, st.Ready)
}
