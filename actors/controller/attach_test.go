package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

func TestSingleAttach(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("v1 attached to n1", r.settled("v1", "n1"))
	if got := len(r.events("v1", "SuccessfulAttachVolume")); got != 1 {
		t.Fatalf("SuccessfulAttachVolume events = %d, want 1", got)
	}
	if c := r.cloud.Calls(); c.AttachNew != 1 || c.Calls[sim.MethodDetach] != 0 {
		t.Fatalf("cloud calls = %+v, want one new attachment and no detach", c)
	}
}

func TestExclusiveVolumeWantedOnTwoNodes(t *testing.T) {
	r := newRig(t)
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("v1 attached to n1", r.settled("v1", "n1"))
	r.inUse("n1", "v1")
	r.workload("w2", "n2", "v1")
	r.eventually("Multi-Attach for n2", func() bool { return len(r.events("v1", "Multi-Attach")) == 1 })
	if ev := r.events("v1", "Multi-Attach")[0]; ev.Node != "n2" {
		t.Fatalf("Multi-Attach names node %q, want n2", ev.Node)
	}
	// More events for the volume do not repeat it: once per volume and node.
	r.ctl.SyncNow()
	r.clk.Advance(r.cfg.SyncPeriod)
	if got := r.volState("v1", "n2"); got != "none" {
		t.Fatalf("v1 on n2 = %s while attached to n1", got)
	}
	// w1 goes; n1 still mounts v1, so nothing moves until n1 lets go.
	must(t, r.ctl.DeleteWorkload("w1"))
	if got := r.volState("v1", "n1"); got != "Attached" {
		t.Fatalf("v1 on n1 = %s, want Attached while in use", got)
	}
	r.inUse("n1")
	r.eventually("v1 moved to n2", r.settled("v1", "n2"))
	if got := len(r.events("v1", "Multi-Attach")); got != 1 {
		t.Fatalf("Multi-Attach events = %d, want exactly 1", got)
	}
	if c := r.cloud.Calls(); c.Calls[sim.MethodDetach] != 1 || c.AttachNew != 2 {
		t.Fatalf("cloud calls = %+v, want 1 detach and 2 attaches; events:%s", c, r.eventLog())
	}
}

func TestMultiNodeVolumeOnThreeNodes(t *testing.T) {
	r := newRig(t)
	r.node("n1", "n2", "n3")
	r.volume("shared", cloud.MultiNode)
	r.workload("w1", "n1", "shared")
	r.workload("w2", "n2", "shared")
	r.workload("w3", "n3", "shared")
	r.eventually("shared attached to all three", r.settled("shared", "n1", "n2", "n3"))
	if got := len(r.events("shared", "Multi-Attach")); got != 0 {
		t.Fatalf("Multi-Attach events = %d for a multi-node volume", got)
	}
	must(t, r.ctl.DeleteWorkload("w2"))
	r.eventually("shared detached from n2 only", r.settled("shared", "n1", "n3"))
}

func TestDeleteVolumeDetachesAndStopsActor(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	if err := r.ctl.DeleteVolume("v1"); err == nil {
		t.Fatal("deleting a volume in use by a workload succeeded")
	}
	must(t, r.ctl.DeleteWorkload("w1"))
	must(t, r.ctl.DeleteVolume("v1"))
	r.eventually("detached", func() bool { return len(r.attachedTo("v1")) == 0 && r.volState("v1", "n1") == "none" })
	if _, alive := r.sys.ProcessRegistry.GetLocal(volumePrefix + "v1"); !alive {
		t.Fatal("actor stopped before RetireAfter")
	}
	r.clk.Advance(r.cfg.RetireAfter)
	r.eventually("actor stopped", func() bool {
		_, alive := r.sys.ProcessRegistry.GetLocal(volumePrefix + "v1")
		return !alive
	})
}

// A desired-state message older than the store snapshot a volume actor
// rebuilt from (queued while it was restoring) must not roll it back.
func TestStaleDesiredStateIgnored(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("attached", r.settled("v1", "n1"))
	r.sys.Root.Send(r.pid(volumePrefix+"v1"), &messages.SetDesiredNodes{VolumeId: "v1", Revision: 1})
	if got := r.volState("v1", "n1"); got != "Attached" || detaches(r) != 0 {
		t.Fatalf("after a stale desired state: %s, %d detaches", got, detaches(r))
	}
}

func TestBadNamesRefused(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	for _, bad := range []string{"", "..", "../etc", "a/b", "/abs", "a\x00b", strings.Repeat("x", 129)} {
		if err := r.ctl.ApplyVolume(store.VolumeSpec{ID: cloud.VolumeID(bad)}); !errors.Is(err, ErrInvalid) {
			t.Errorf("volume %q: err = %v, want ErrInvalid", bad, err)
		}
		if err := r.ctl.ApplyNode(store.NodeSpec{Name: cloud.NodeName(bad)}); !errors.Is(err, ErrInvalid) {
			t.Errorf("node %q: err = %v, want ErrInvalid", bad, err)
		}
		if err := r.ctl.ApplyWorkload(store.Workload{UID: bad, Node: "n1"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("workload %q: err = %v, want ErrInvalid", bad, err)
		}
	}
	if vols, _ := r.store.Volumes(); len(vols) != 0 {
		t.Fatalf("store holds %v after refused applies", vols)
	}
}
