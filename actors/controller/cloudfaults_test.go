package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// The cloud faults Kubernetes was built for, on the real actor system with
// a permissive cloud (the rig's default), with cloud call counts asserted
// where they matter. The rig's checkers judge every change as it happens
// (I1 at cleanup from the cloud's changes; I2 and I4 at each detach).

// shortCalls bounds every cloud call by one second of real time, so that a
// lost reply costs the test little, with room for a loaded machine.
func shortCalls(c *Config, _ *sim.Config) { c.CloudTimeout = time.Second }

// advanceUntil advances the fake clock in steps (each step lets the
// actors run) until cond holds.
func (r *rig) advanceUntil(what string, step time.Duration, cond func() bool) {
	r.t.Helper()
	r.eventually(what, func() bool {
		if cond() {
			return true
		}
		r.clk.Advance(step)
		return false
	})
}

// A call that takes effect and then loses its reply: the caller sees a
// timeout, the cloud changed. The attachment is Uncertain (I6) and resolved
// without a second attachment or detachment being made.
func TestLostReplies(t *testing.T) {
	r := newRig(t, shortCalls)
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.cloud.SetReplyLoss(sim.MethodAttach, 1)
	r.workload("w1", "n1", "v1")
	r.eventually("the attach landed and its caller timed out", func() bool {
		return len(r.events("v1", "FailedAttachVolume")) == 1 && len(r.attachedTo("v1")) == 1
	})
	r.cloud.SetReplyLoss(sim.MethodAttach, 0)
	r.advanceUntil("attached", 100*time.Millisecond, r.settled("v1", "n1"))
	if c := r.cloud.Calls(); c.AttachNew != 1 || c.Calls[sim.MethodAttach] < 2 {
		t.Fatalf("attach calls %d, new attachments %d: want at least 2 calls (the retries idempotent) and 1 attachment", c.Calls[sim.MethodAttach], c.AttachNew)
	}

	r.cloud.SetReplyLoss(sim.MethodDetach, 1)
	must(t, r.ctl.DeleteWorkload("w1"))
	r.eventually("the detach landed and its caller timed out", func() bool {
		return len(r.events("v1", "FailedDetachVolume")) == 1 && len(r.attachedTo("v1")) == 0
	})
	r.cloud.SetReplyLoss(sim.MethodDetach, 0)
	r.advanceUntil("detached everywhere", 100*time.Millisecond, r.settled("v1"))
	if c := r.cloud.Calls(); c.DetachNew != 1 || c.AttachNew != 1 {
		t.Fatalf("new attachments %d, detachments %d: want 1 and 1", c.AttachNew, c.DetachNew)
	}
}

// A call that hangs until its deadline holds up its own volume only; it
// lands at the very end and the volume is settled without a second attach.
func TestHungCallHoldsOnlyItsVolume(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.CloudTimeout = 5 * time.Second })
	r.node("n1")
	r.volume("slow", cloud.Exclusive)
	r.volume("fast", cloud.Exclusive)
	r.cloud.SetHangRate(sim.MethodAttach, 1)
	r.workload("w1", "n1", "slow")
	r.eventually("the slow attach is sent", func() bool { return r.cloud.Calls().Calls[sim.MethodAttach] == 1 })
	r.cloud.SetHangRate(sim.MethodAttach, 0)
	r.workload("w2", "n1", "fast")
	r.eventually("the other volume attached while the first hangs", r.settled("fast", "n1"))
	if len(r.events("slow", "FailedAttachVolume")) != 0 || len(r.attachedTo("slow")) != 0 {
		t.Fatalf("the hung attach ended before its deadline")
	}
	r.eventually("the hung attach timed out", func() bool { return len(r.events("slow", "FailedAttachVolume")) == 1 })
	r.advanceUntil("the slow volume settled", 200*time.Millisecond, r.settled("slow", "n1"))
	if c := r.cloud.Calls(); c.AttachNew != 2 {
		t.Fatalf("%d attachments made, want 2", c.AttachNew)
	}
}

// An instance replaced: the node keeps its name, gets a new instance. Once
// the sync has seen the old instance gone, no call names it again, and the
// volume goes to the new instance.
func TestInstanceReplaced(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.volume("v2", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.workload("w2", "n2", "v2")
	r.eventually("attached", func() bool { return r.settled("v1", "n1")() && r.settled("v2", "n2")() })
	old, _ := r.cloud.InstanceOf("n1")
	repl, err := r.cloud.Replace("n1")
	must(t, err)
	resolves := r.cloud.Calls().Calls[sim.MethodInstanceID]
	r.ctl.SyncNow()
	r.eventually("one sync pass", func() bool { return len(passes()) == 1 })
	mark := r.calls.mark()
	r.advanceUntil("v1 on the new instance", 100*time.Millisecond, r.settled("v1", "n1"))
	if got := r.cloud.Attachments()["v1"]; !slices.Equal(got, []cloud.InstanceID{repl}) {
		t.Fatalf("v1 attached to %v, want the new instance %s", got, repl)
	}
	if n := r.calls.namedSince(mark, old); n != 0 {
		t.Fatalf("%d calls named the replaced instance %s after the sync saw it gone", n, old)
	}
	if n := r.cloud.Calls().Calls[sim.MethodInstanceID] - resolves; n != 1 {
		t.Fatalf("%d InstanceID calls after the replacement, want 1 (n1 resolved again once)", n)
	}
	if len(r.events("v1", "AttachmentLost")) != 1 || !r.settled("v2", "n2")() {
		t.Fatal("want one AttachmentLost for v1 and v2 undisturbed")
	}
}

// An instance deleted for good: the detach from it completes (the cloud
// says NotFound: nothing is attached there), the node's status is
// cleaned, nothing waits forever — with the controller's instance cache
// warm, and after a controller restart (cold cache: the name no longer
// resolves).
func TestInstanceDeletedForGood(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "warm", true: "restarted"}[restart], func(t *testing.T) {
			r := newRig(t)
			r.oneAttached()
			inst, _ := r.cloud.InstanceOf("n1")
			must(t, r.cloud.Delete(inst))
			if restart {
				r.restartController()
			}
			must(t, r.ctl.DeleteWorkload("w1"))
			r.advanceUntil("detached and the status cleaned", 100*time.Millisecond, func() bool {
				return r.volState("v1", "n1") == "none" && !r.reported("n1", "v1")
			})
			if c := r.cloud.Calls(); c.DetachNew != 0 || c.Errors[sim.MethodAttach] != 0 {
				t.Fatalf("counters %+v: nothing was left to detach, nothing to attach", c)
			}
		})
	}
}

// oneAttached sets up node n1 and exclusive volume v1 used there by
// workload w1, and waits until v1 is attached and reported.
func (r *rig) oneAttached() {
	r.t.Helper()
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
}

// restartController stops the controller and starts a new one on the same
// store and cloud, as after a crash of the process.
func (r *rig) restartController() {
	r.t.Helper()
	must(r.t, r.ctl.Stop(5*time.Second))
	r.ctl = New(r.sys, r.cfg, r.calls, r.store, r.rec)
	must(r.t, r.ctl.Start())
}

// A node deleted while its volume is attached and in use: nothing is
// detached while in use (I2), across a controller restart too; once the
// node stops using it, it is detached, after the status stopped listing
// it (I4, judged by the rig at the detach).
func TestNodeDeletedWhileVolumeInUse(t *testing.T) {
	r := newRig(t)
	r.oneAttached()
	r.inUse("n1", "v1")
	must(t, r.ctl.DeleteWorkload("w1"))
	must(t, r.ctl.DeleteNode("n1"))
	r.restartController()
	r.eventually("v1 rebuilt", func() bool {
		st, err := r.ctl.VolumeStatus("v1", time.Second)
		return err == nil && st.Restored
	})
	for i := range 5 {
		r.clk.Advance(time.Second)
		// Asked through the actor's mailbox: every decision it took on
		// what came before is visible here.
		// Attached, or Uncertain while the rebuilt actor fences the node
		// of its predecessor's attach; never Detaching, never forgotten.
		if st := r.volState("v1", "n1"); st != "Attached" && st != "Uncertain" {
			t.Fatalf("step %d: v1 is %s on the deleted node while in use there, want no detach started", i, st)
		}
	}
	if c := r.cloud.Calls(); c.Calls[sim.MethodDetach] != 0 {
		t.Fatalf("%d detach calls while the volume is in use on the deleted node", c.Calls[sim.MethodDetach])
	}
	r.ctl.ReportVolumesInUse("n1", nil)
	// (The node is gone from the store: read the cloud, not r.attachedTo.)
	r.advanceUntil("detached", 100*time.Millisecond, func() bool {
		return len(r.cloud.Attachments()["v1"]) == 0 && r.volState("v1", "n1") == "none" && !r.reported("n1", "v1")
	})
	if c := r.cloud.Calls(); c.DetachNew != 1 {
		t.Fatalf("%d detachments, want 1", c.DetachNew)
	}
}

// An instance that comes back between two sync passes: the next pass sees
// it running without its volumes and the volumes are attached again.
func TestInstanceBackBetweenSyncPasses(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.oneAttached()
	inst, _ := r.cloud.InstanceOf("n1")
	must(t, r.cloud.Terminate(inst))
	must(t, r.cloud.Start(inst))
	r.ctl.SyncNow()
	r.eventually("one sync pass", func() bool { return len(passes()) == 1 })
	r.advanceUntil("attached again", 100*time.Millisecond, r.settled("v1", "n1"))
	if c := r.cloud.Calls(); c.AttachNew != 2 || len(r.events("v1", "AttachmentLost")) != 1 {
		t.Fatalf("%d attachments and %d AttachmentLost, want 2 and 1", c.AttachNew, len(r.events("v1", "AttachmentLost")))
	}
}

// A detach forced from the cloud's side while the node keeps running (an
// operator in the console): the sync finds it lost and attaches it again.
func TestConsoleDetach(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.oneAttached()
	inst, _ := r.cloud.InstanceOf("n1")
	must(t, r.cloud.ConsoleDetach("v1", inst))
	r.ctl.SyncNow()
	r.eventually("one sync pass", func() bool { return len(passes()) == 1 })
	r.advanceUntil("attached again", 100*time.Millisecond, r.settled("v1", "n1"))
	if c := r.cloud.Calls(); c.AttachNew != 2 || c.DetachNew != 0 {
		t.Fatalf("%d attachments, %d detachments by tether: want 2 and 0", c.AttachNew, c.DetachNew)
	}
}

// The rig's I4 checker is proven: with the node status answering a detach
// preparation without writing first, the detach is caught.
func TestRigCatchesI4(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Node.BreakPrepareBeforeWrite = true })
	r.oneAttached()
	must(t, r.ctl.DeleteWorkload("w1"))
	r.eventually("detached", func() bool { return len(r.attachedTo("v1")) == 0 })
	if v := r.takeViolations(); len(v) == 0 || !strings.HasPrefix(v[0], "I4") {
		t.Fatalf("violations %v, want I4", v)
	}
}

// ... and so is its I2 checker.
func TestRigCatchesI2(t *testing.T) {
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Volume.BreakIgnoreInUse, c.Node.BreakIgnoreInUse = true, true })
	r.oneAttached()
	r.inUse("n1", "v1")
	must(t, r.ctl.DeleteWorkload("w1"))
	r.eventually("detached", func() bool { return len(r.attachedTo("v1")) == 0 })
	if v := r.takeViolations(); len(v) == 0 || !strings.HasPrefix(v[0], "I2") {
		t.Fatalf("violations %v, want I2", v)
	}
}
