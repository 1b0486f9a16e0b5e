package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tether/tether/cloud"
)

// DeleteWorkloads and DeleteVolumes remove many objects in one transaction
// each: the volumes get detached, and a volume still in use refuses the
// whole batch.
func TestBulkDelete(t *testing.T) {
	r := newRig(t)
	r.node("n1", "n2")
	var uids []string
	var vols []cloud.VolumeID
	for i := range 6 {
		v := cloud.VolumeID(fmt.Sprintf("v%d", i))
		vols = append(vols, v)
		r.volume(v, cloud.Exclusive)
		uid := fmt.Sprintf("w%d", i)
		uids = append(uids, uid)
		r.workload(uid, cloud.NodeName(fmt.Sprintf("n%d", 1+i%2)), v)
	}
	for i, v := range vols {
		r.eventually("attached", r.settled(v, cloud.NodeName(fmt.Sprintf("n%d", 1+i%2))))
	}
	if err := r.ctl.DeleteVolumes(vols); !errors.Is(err, ErrInvalid) {
		t.Fatalf("deleting volumes in use: %v, want ErrInvalid", err)
	}
	if got, _ := r.store.Volumes(); len(got) != len(vols) {
		t.Fatalf("a refused batch deleted volumes: %d left of %d", len(got), len(vols))
	}
	must(t, r.ctl.DeleteWorkloads(append(uids[:4:4], "no-such-workload")))
	if got, _ := r.store.Workloads(); len(got) != 2 {
		t.Fatalf("%d workloads left, want 2", len(got))
	}
	for _, v := range vols[:4] {
		r.eventually("detached", r.settled(v))
	}
	must(t, r.ctl.DeleteVolumes(vols[:4]))
	if got, _ := r.store.Volumes(); len(got) != 2 {
		t.Fatalf("%d volumes left, want 2", len(got))
	}
	for i, v := range vols[4:] {
		if got := r.attachedTo(v); len(got) != 1 || got[0] != cloud.NodeName(fmt.Sprintf("n%d", 1+(i+4)%2)) {
			t.Errorf("%s, not deleted, is attached to %v", v, got)
		}
	}
}
