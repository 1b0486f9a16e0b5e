package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// A cloud whose listing may overstate (a CSI driver with
// LIST_VOLUMES_PUBLISHED_NODES, whose published_node_ids "MAY include
// nodes not published to"): an attachment it lists that no node status
// has is reported once and left alone, while one it no longer lists is
// still healed.
func TestListingMayOverstate(t *testing.T) {
	r := newRigListing(t, nil, cloud.ListingMayOverstate)
	passes := r.passes()
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.volume("x", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("v1 attached to n1", r.settled("v1", "n1"))
	r.inUse("n1", "v1")

	// x listed on n2, where tether never attached it.
	inst2, _ := r.cloud.InstanceOf("n2")
	if _, err := r.cloud.Attach(t.Context(), "x", inst2); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		r.ctl.SyncNow()
		r.eventually("pass done", func() bool { return len(passes()) == i })
	}
	if got := r.attachedTo("x"); len(got) != 1 || got[0] != "n2" {
		t.Fatalf("x attached to %v, want still n2: an extra listed node is never by itself detached", got)
	}
	if got := len(r.events("x", EventUnexpectedAttachment)); got != 1 {
		t.Errorf("%s events for x = %d, want 1 (once while it lasts)%s", EventUnexpectedAttachment, got, r.eventLog())
	}
	if got := len(r.events("x", "DanglingAttachment")); got != 0 {
		t.Errorf("DanglingAttachment events for x = %d, want 0", got)
	}
	if got := r.volState("x", "n2"); got != "none" {
		t.Errorf("x on n2 = %s in its volume actor, want none: the listing proves nothing", got)
	}

	// The listing can still reveal an attachment gone missing: n1's
	// machine is replaced, and its volumes with it.
	repl, err := r.cloud.Replace("n1")
	must(t, err)
	r.clk.Advance(time.Millisecond) // truth newer than the attachment
	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 4 })
	r.advanceUntil("v1 on n1's new instance", 100*time.Millisecond, r.settled("v1", "n1"))
	if got := r.cloud.Attachments()["v1"]; !slices.Equal(got, []cloud.InstanceID{repl}) {
		t.Fatalf("v1 attached to %v, want the new instance %s", got, repl)
	}
	if got := len(r.events("v1", "AttachmentLost")); got != 1 {
		t.Errorf("AttachmentLost events for v1 = %d, want 1", got)
	}
}

// A cloud with no listing to believe (a CSI driver without
// LIST_VOLUMES_PUBLISHED_NODES): the controller asks it nothing, its
// records are the truth, and attach and detach still work.
func TestListingNoneAsksNothing(t *testing.T) {
	r := newRigListing(t, nil, cloud.ListingNone)
	passes := r.passes()
	r.node("n1", "n2")
	r.volume("v1", cloud.Exclusive)
	r.workload("w1", "n1", "v1")
	r.eventually("v1 attached to n1", r.settled("v1", "n1"))
	r.inUse("n1", "v1")
	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 1 })
	if p := passes()[0]; p.Calls != 0 {
		t.Errorf("sync pass made %d calls, want 0", p.Calls)
	}
	// An attachment made behind tether's back is neither seen nor touched.
	inst2, _ := r.cloud.InstanceOf("n2")
	r.volume("x", cloud.Exclusive)
	if _, err := r.cloud.Attach(t.Context(), "x", inst2); err != nil {
		t.Fatal(err)
	}
	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 2 })
	r.inUse("n1")
	must(t, r.ctl.DeleteWorkload("w1"))
	r.eventually("v1 detached", r.settled("v1"))
	if got := r.attachedTo("x"); len(got) != 1 {
		t.Errorf("x attached to %v, want n2 still", got)
	}
	if n := r.calls.queries(); n != 0 {
		t.Errorf("%d VolumesAreAttached/InstanceVolumes calls, want 0: the listing is not to be interpreted", n)
	}
}
