package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// Controller and agents together: workloads created, every volume attached
// and mounted; workloads deleted, everything unmounted and detached, and
// never a detach while mounted nor a mount while not attached (the rig's
// checkers).
func TestControllerAndAgentsTogether(t *testing.T) {
	r := newRig(t)
	r.addNode("n1", "n2", "n3")
	r.volume("shared", cloud.MultiNode)
	for i := 1; i <= 3; i++ {
		v := cloud.VolumeID(fmt.Sprintf("data-%d", i))
		r.volume(v, cloud.Exclusive)
		r.workload(fmt.Sprintf("app-%d", i), cloud.NodeName(fmt.Sprintf("n%d", i)), v, "shared")
	}
	for i := 1; i <= 3; i++ {
		n, uid := cloud.NodeName(fmt.Sprintf("n%d", i)), fmt.Sprintf("app-%d", i)
		v := cloud.VolumeID(fmt.Sprintf("data-%d", i))
		r.eventually(uid+" mounted", func() bool { return r.mounted(n, uid, v)() && r.mounted(n, uid, "shared")() })
		// Data written through the workload's path lands on the volume.
		must(t, os.WriteFile(filepath.Join(r.podPath(n, uid, v), "hello"), []byte(uid), 0o644))
	}
	if got := r.mounters["n1"].Count("stage"); got != 2 {
		t.Fatalf("n1 staged %d times, want 2 (data-1, shared)", got)
	}
	for i := 1; i <= 3; i++ {
		must(t, r.ctl.DeleteWorkload(fmt.Sprintf("app-%d", i)))
	}
	for _, n := range []cloud.NodeName{"n1", "n2", "n3"} {
		r.eventually(string(n)+" clean", r.clean(n))
	}
	r.eventually("everything detached", func() bool { return len(r.cloud.Attachments()) == 0 })
	c := r.cloud.Calls()
	if c.AttachNew != 6 || c.DetachNew != 6 {
		t.Fatalf("attachments made %d, removed %d; want 6 and 6", c.AttachNew, c.DetachNew)
	}
	if got := c.Calls[sim.MethodDetach]; got != 6 {
		t.Fatalf("detach calls = %d, want 6 (none refused or repeated)", got)
	}
}

// Two workloads share a volume on one node: one stage, two publishes, and
// the unstage (then the detach) only after the last one leaves.
func TestSharedVolumeOnOneNode(t *testing.T) {
	r := newRig(t)
	r.addNode("n1")
	r.volume("v1", cloud.MultiNode)
	r.workload("a", "n1", "v1")
	r.workload("b", "n1", "v1")
	r.eventually("both mounted", func() bool { return r.mounted("n1", "a", "v1")() && r.mounted("n1", "b", "v1")() })
	m := r.mounters["n1"]
	if m.Count("stage") != 1 || m.Count("publish") != 2 {
		t.Fatalf("stage %d, publish %d; want 1 and 2", m.Count("stage"), m.Count("publish"))
	}
	must(t, r.ctl.DeleteWorkload("a"))
	r.eventually("a unpublished", func() bool { return m.Count("unpublish") == 1 })
	if !r.mounted("n1", "b", "v1")() || m.Count("unstage") != 0 || len(r.cloud.Attachments()["v1"]) != 1 {
		t.Fatal("b lost its mount, or the volume was unstaged or detached, while b still uses it")
	}
	must(t, r.ctl.DeleteWorkload("b"))
	r.eventually("clean", r.clean("n1"))
	r.eventually("detached", func() bool { return len(r.cloud.Attachments()["v1"]) == 0 })
	if m.Count("unstage") != 1 {
		t.Fatalf("unstage %d, want 1", m.Count("unstage"))
	}
}

// Data written on node A is read back on node B after the workload moves
// (its exclusive volume is unmounted, detached, attached and mounted there).
func TestDataFollowsTheVolume(t *testing.T) {
	r := newRig(t)
	r.addNode("a", "b")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "a", "v1")
	r.eventually("mounted on a", r.mounted("a", "w1", "v1"))
	must(t, os.WriteFile(filepath.Join(r.podPath("a", "w1", "v1"), "data.txt"), []byte("written on a"), 0o644))
	r.workload("w1", "b", "v1")
	r.eventually("mounted on b", r.mounted("b", "w1", "v1"))
	r.eventually("a clean", r.clean("a"))
	got, err := os.ReadFile(filepath.Join(r.podPath("b", "w1", "v1"), "data.txt"))
	must(t, err)
	if string(got) != "written on a" {
		t.Fatalf("read %q on b", got)
	}
}

// Names that would escape the data directory are refused by the agent
// before any path is built, even when they reach it without the
// controller's validation; nothing around the data directory changes.
func TestAgentRefusesBadNames(t *testing.T) {
	r := newRig(t)
	r.addNode("n1")
	r.volume("v1", cloud.MultiNode)
	r.workload("good", "n1", "v1")
	r.eventually("mounted", r.mounted("n1", "good", "v1"))
	before := listAround(t, r.data)
	sendWorkloads(r, "n1", map[string][]string{"good": {"v1"}, "../../escape": {"v1"}, "w2": {"../v1"}, "w3": {"/etc"}})
	for _, uid := range []string{"../../escape", "w2", "w3"} {
		r.eventually("FailedMount for "+uid, func() bool { return len(r.events(events.KindWorkload, uid, "FailedMount")) > 0 })
	}
	after := listAround(t, r.data)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("filesystem around the data dir changed:\nbefore %v\nafter  %v", before, after)
	}
	if !r.mounted("n1", "good", "v1")() {
		t.Fatal("the good workload lost its mount")
	}
}

// An agent stopped without cleanup and restarted reads its mounts back:
// what is still wanted stays mounted without a remount, a half-done publish
// (a crash between mkdir and mount) is completed, and a mount nobody wants
// any more (its workload was deleted while the agent was down) is
// unmounted, after which the controller detaches it.
func TestAgentRestartReconstructs(t *testing.T) {
	r := newRig(t)
	r.addNode("n1")
	r.volume("keep", cloud.Exclusive)
	r.volume("half", cloud.Exclusive)
	r.volume("orphan", cloud.MultiNode)
	r.workload("w-keep", "n1", "keep")
	r.workload("w-orphan", "n1", "orphan")
	r.eventually("mounted", func() bool { return r.mounted("n1", "w-keep", "keep")() && r.mounted("n1", "w-orphan", "orphan")() })
	must(t, os.WriteFile(filepath.Join(r.podPath("n1", "w-keep", "keep"), "f"), []byte("kept"), 0o644))

	must(t, r.agents["n1"].Stop()) // no cleanup: mounts stay
	must(t, r.ctl.DeleteWorkload("w-orphan"))
	r.workload("w-half", "n1", "half")
	must(t, os.MkdirAll(r.podPath("n1", "w-half", "half"), 0o750)) // the half-done publish

	r.startAgent("n1", nil)
	r.eventually("half mounted, orphan gone", func() bool {
		return r.mounted("n1", "w-half", "half")() && r.mounted("n1", "w-keep", "keep")() && !r.mounted("n1", "w-orphan", "orphan")()
	})
	r.eventually("orphan detached", func() bool { return len(r.cloud.Attachments()["orphan"]) == 0 })
	m := r.mounters["n1"]
	if m.Count("stage:keep") != 0 || m.Count("publish:keep") != 0 {
		t.Fatalf("the kept volume was mounted again: stage %d, publish %d", m.Count("stage:keep"), m.Count("publish:keep"))
	}
	if m.Count("stage:half") != 1 || m.Count("publish:half") != 1 {
		t.Fatalf("half-done volume: stage %d, publish %d; want 1 and 1", m.Count("stage:half"), m.Count("publish:half"))
	}
	if m.Count("unpublish:orphan") != 1 || m.Count("unstage:orphan") != 1 {
		t.Fatalf("orphan: unpublish %d, unstage %d; want 1 and 1", m.Count("unpublish:orphan"), m.Count("unstage:orphan"))
	}
	if got, err := os.ReadFile(filepath.Join(r.podPath("n1", "w-keep", "keep"), "f")); err != nil || string(got) != "kept" {
		t.Fatalf("kept mount lost its data: %q %v", got, err)
	}
	if len(r.events(events.KindNode, "n1", "Reconstructed")) != 1 {
		t.Fatal("no Reconstructed event")
	}
}

// I3 end to end: the agent reports a volume in use and mounts it only once
// the controller has both heard that report and attached the volume here.
// A slow cloud makes the order visible.
func TestMountWaitsForAttach(t *testing.T) {
	r := newRig(t)
	r.addNode("n1")
	r.volume("v1", cloud.Exclusive)
	r.cloud.FailNext(sim.MethodAttach, 2, cloud.KindRetryable)
	r.workload("w1", "n1", "v1")
	r.eventually("in use reported while not attached", func() bool {
		st, err := r.ctl.NodeStatus("n1", time.Second)
		must(t, err)
		return len(st.VolumesInUse) == 1 && len(st.VolumesAttached) == 0
	})
	if m := r.mounters["n1"]; m.Count("stage") != 0 {
		t.Fatal("staged before the attach")
	}
	r.eventually("first failure", func() bool { return r.cloud.Calls().Calls[sim.MethodAttach] == 1 })
	r.advanceUntil("second failure", 100*time.Millisecond, func() bool { return r.cloud.Calls().Calls[sim.MethodAttach] >= 2 })
	if m := r.mounters["n1"]; m.Count("stage") != 0 {
		t.Fatal("staged after a failed attach")
	}
	r.advanceUntil("mounted after the attach", 100*time.Millisecond, r.mounted("n1", "w1", "v1"))
	if got := r.cloud.Calls().Calls[sim.MethodAttach]; got != 3 {
		t.Fatalf("attach calls = %d, want 3 (two failures, one success)", got)
	}
}
