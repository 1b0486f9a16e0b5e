package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// mountState is the agent's state of vol's stage (uid "") or publish.
func (r *rig) mountState(n cloud.NodeName, uid string, vol cloud.VolumeID) string {
	st, err := r.agents[n].Status(5 * time.Second)
	must(r.t, err)
	for _, m := range st.Mounts {
		if m.VolumeId == string(vol) && m.WorkloadUid == uid {
			return m.State
		}
	}
	return "absent"
}

// eventsSaying counts the events of typ on obj whose message holds text.
func (r *rig) eventsSaying(kind events.Kind, name, typ, text string) int {
	n := 0
	for _, e := range r.events(kind, name, typ) {
		if strings.Contains(e.Message, text) {
			n++
		}
	}
	return n
}

// hungOnN1 starts node n1 whose mounter passes h's gates, with volumes a
// and b, and hangs the stage of a under workload wa.
func hungOnN1(t *testing.T) (*rig, *hangs) {
	r := newRig(t)
	r.stopGrace = 100 * time.Millisecond // Stop waits no longer for the hung call
	h := newHangs(t)
	r.addNodeWith("n1", h.wrap)
	r.volume("a", cloud.Exclusive)
	r.volume("b", cloud.Exclusive)
	h.hang("stage:a")
	r.workload("wa", "n1", "a")
	r.eventually("the stage of a hanging", func() bool { _, blocked := h.calls("stage:a"); return blocked == 1 })
	return r, h
}

// (a) A hanging stage of volume a delays nothing else: b is mounted on the
// same node while it hangs.
func TestHungStageDoesNotDelayOtherVolumes(t *testing.T) {
	r, h := hungOnN1(t)
	r.workload("wb", "n1", "b")
	r.eventually("b mounted while the stage of a hangs", r.mounted("n1", "wb", "b"))
	if _, blocked := h.calls("stage:a"); blocked != 1 {
		t.Fatalf("the stage of a no longer hangs (%d blocked)", blocked)
	}
	if got := r.mountState("n1", "", "a"); got != "Pending" {
		t.Fatalf("stage of a is %s, want Pending", got)
	}
}

// (b) The hung stage times out: FailedMount saying it still runs, and no
// second stage of a while it does, even after the backoff; once released
// it returns and a is staged again and mounted.
func TestHungStageTimesOutThenRetries(t *testing.T) {
	r, h := hungOnN1(t)
	r.clk.Advance(r.opTimeout)
	r.eventually("FailedMount: timed out, still running", func() bool {
		return r.eventsSaying(events.KindNode, "n1", "FailedMount", "timed out after 10s, still running") == 1
	})
	r.clk.Advance(5 * time.Second) // far past the first backoff (500 ms)
	if got := r.mountState("n1", "", "a"); got != "Uncertain" {
		t.Fatalf("stage of a is %s while its call hangs, want Uncertain (not retried)", got)
	}
	if entered, _ := h.calls("stage:a"); entered != 1 {
		t.Fatalf("a staged %d times while its first stage hangs", entered)
	}
	h.release("stage:a")
	r.eventually("a mounted after the release", r.mounted("n1", "wa", "a"))
	if entered, _ := h.calls("stage:a"); entered != 2 {
		t.Fatalf("a staged %d times, want 2 (the hung call, then the retry)", entered)
	}
	if n := len(r.events(events.KindNode, "n1", "VolumeOperationReturned")); n != 1 {
		t.Fatalf("%d VolumeOperationReturned events, want 1", n)
	}
}

// (c) A hanging unpublish blocks neither mounts nor unmounts of other
// volumes, and keeps its own volume in use (attached) until it returns.
func TestHungUnmountDoesNotBlockOtherVolumes(t *testing.T) {
	r := newRig(t)
	h := newHangs(t)
	r.addNodeWith("n1", h.wrap)
	for _, v := range []cloud.VolumeID{"a", "b", "c"} {
		r.volume(v, cloud.Exclusive)
	}
	r.workload("wa", "n1", "a")
	r.workload("wb", "n1", "b")
	r.eventually("a and b mounted", func() bool { return r.mounted("n1", "wa", "a")() && r.mounted("n1", "wb", "b")() })

	h.hang("unpublish:a")
	must(t, r.ctl.DeleteWorkload("wa"))
	r.eventually("the unpublish of a hanging", func() bool { _, blocked := h.calls("unpublish:a"); return blocked == 1 })
	r.workload("wc", "n1", "c")
	r.eventually("c mounted while a's unpublish hangs", r.mounted("n1", "wc", "c"))
	r.clk.Advance(r.opTimeout)
	r.eventually("FailedUnmount: timed out, still running", func() bool {
		return r.eventsSaying(events.KindWorkload, "wa", "FailedUnmount", "still running") == 1
	})
	must(t, r.ctl.DeleteWorkload("wb"))
	r.eventually("b unmounted and detached", func() bool {
		return r.mounters["n1"].Count("unstage:b") == 1 && len(r.cloud.Attachments()["b"]) == 0
	})
	if len(r.cloud.Attachments()["a"]) != 1 {
		t.Fatal("a detached while its unpublish may still be running")
	}
	r.clk.Advance(time.Second) // past the backoff: a is retried as soon as its call returns
	h.release("unpublish:a")
	r.eventually("a unmounted and detached", func() bool { return len(r.cloud.Attachments()["a"]) == 0 })
	if got := r.mounters["n1"].Count("unstage:a"); got != 1 {
		t.Fatalf("a unstaged %d times, want 1", got)
	}
}

// (d) Stopping the agent while a stage hangs returns promptly; the next
// agent (and its restart after a crash) reconstructs and serves other
// volumes, and leaves a alone until the hung call returns.
func TestAgentStopAndRestartWhileAMountHangs(t *testing.T) {
	r, h := hungOnN1(t)
	start := time.Now()
	must(t, r.agents["n1"].Stop())
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Stop took %s while a stage hangs", took)
	}
	r.workload("wb", "n1", "b")
	r.startAgent("n1", h.wrap)
	r.eventually("b mounted by the new agent", r.mounted("n1", "wb", "b"))
	still := func() int {
		return r.eventsSaying(events.KindNode, "n1", "FailedMount", "by an earlier incarnation, still running")
	}
	if n := still(); n != 1 {
		t.Fatalf("%d events about the earlier incarnation's hung stage, want 1", n)
	}

	r.sys.Root.Send(r.agents["n1"].PID(), &messages.Crash{Reason: "test"})
	r.eventually("restarted after the crash", func() bool {
		r.clk.Advance(50 * time.Millisecond) // the supervisor's backoff runs on the rig's clock
		return still() == 2
	})
	r.eventually("ready again", func() bool {
		st, err := r.agents["n1"].Status(5 * time.Second)
		return err == nil && st.Ready
	})
	if got := r.mountState("n1", "", "a"); got != "Uncertain" {
		t.Fatalf("stage of a is %s while an earlier incarnation's call hangs, want Uncertain", got)
	}
	if entered, _ := h.calls("stage:a"); entered != 1 {
		t.Fatalf("a staged %d times while the first stage hangs", entered)
	}
	h.release("stage:a")
	r.eventually("a mounted after the release", r.mounted("n1", "wa", "a"))
	if !r.mounted("n1", "wb", "b")() {
		t.Fatal("b lost its mount")
	}
}

// Reconstruction does not wait for a mount whose state does not come: the
// agent starts, reports it, treats it as half-done (completing it, as it
// is wanted) and serves the other volumes.
func TestReconstructionDoesNotWaitForAHungMount(t *testing.T) {
	r := newRig(t)
	r.opTimeout = 300 * time.Millisecond // the scan's real-time bound
	h := newHangs(t)
	r.addNodeWith("n1", h.wrap)
	r.volume("a", cloud.Exclusive)
	r.volume("b", cloud.Exclusive)
	r.workload("wa", "n1", "a")
	r.workload("wb", "n1", "b")
	r.eventually("a and b mounted", func() bool { return r.mounted("n1", "wa", "a")() && r.mounted("n1", "wb", "b")() })
	must(t, r.agents["n1"].Stop())

	h.hang("inspect:a")
	r.startAgent("n1", h.wrap)
	if _, err := r.agents["n1"].Status(time.Second); err != nil {
		t.Fatalf("the agent does not answer while its scan waits: %v", err)
	}
	r.eventually("reported", func() bool {
		return r.eventsSaying(events.KindNode, "n1", "FailedMount", "did not answer in time") == 1 &&
			r.eventsSaying(events.KindWorkload, "wa", "FailedMount", "did not answer in time") == 1
	})
	r.eventually("both mounted", func() bool { return r.mounted("n1", "wa", "a")() && r.mounted("n1", "wb", "b")() })
	if _, blocked := h.calls("inspect:a"); blocked != 2 {
		t.Fatalf("%d inspections of a hang, want 2 (its stage and its publish)", blocked)
	}
	m := r.mounters["n1"] // the new agent's
	if m.Count("stage:b") != 0 || m.Count("publish:b") != 0 {
		t.Fatalf("b mounted again (stage %d, publish %d): it was kept across the restart", m.Count("stage:b"), m.Count("publish:b"))
	}
	if m.Count("stage:a") != 1 || m.Count("publish:a") != 1 {
		t.Fatalf("a: stage %d, publish %d; want 1 and 1 (completed as half-done)", m.Count("stage:a"), m.Count("publish:a"))
	}
}
