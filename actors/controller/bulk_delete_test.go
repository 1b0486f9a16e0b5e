package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// DeleteWorkloads and DeleteVolumes remove many objects in one transaction
// each: the volumes get detached, and a volume still in use refuses the
// whole batch. On a remote store a batch of bulkTell or more reads the
// store once (deleteReader) and must decide exactly as the small one does.
func TestBulkDelete(t *testing.T) {
	for _, n := range []int{6, bulkTell + 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testBulkDelete(t, n, nil) })
		t.Run(fmt.Sprint(n, " remote"), func(t *testing.T) { testBulkDelete(t, n, remote) })
	}
}

func testBulkDelete(t *testing.T, n int, wrap func(*store.Memory) store.Store) {
	r := newRigStore(t, wrap)
	r.node("n1", "n2")
	var uids []string
	var vols []cloud.VolumeID
	for i := range n {
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
	if err := r.ctl.DeleteVolumes(vols); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `volume "v0" is used by workloads on [n1]`) {
		t.Fatalf("deleting volumes in use: %v, want ErrInvalid naming v0 and n1", err)
	}
	if got, _ := r.store.Volumes(); len(got) != len(vols) {
		t.Fatalf("a refused batch deleted volumes: %d left of %d", len(got), len(vols))
	}
	k := n - 2 // all but the last two
	must(t, r.ctl.DeleteWorkloads(append(uids[:k:k], "no-such-workload")))
	if got, _ := r.store.Workloads(); len(got) != 2 {
		t.Fatalf("%d workloads left, want 2", len(got))
	}
	if err := r.ctl.DeleteVolumes(vols[k-1:]); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("volume %q is used", vols[k])) {
		t.Fatalf("deleting a batch with one volume in use: %v, want ErrInvalid naming %s", err, vols[k])
	}
	for _, v := range vols[:k] {
		r.eventually("detached", r.settled(v))
	}
	must(t, r.ctl.DeleteVolumes(append(vols[:k:k], "no-such-volume")))
	if got, _ := r.store.Volumes(); len(got) != 2 {
		t.Fatalf("%d volumes left, want 2", len(got))
	}
	for i, v := range vols[k:] {
		if got := r.attachedTo(v); len(got) != 1 || got[0] != cloud.NodeName(fmt.Sprintf("n%d", 1+(i+k)%2)) {
			t.Errorf("%s, not deleted, is attached to %v", v, got)
		}
	}
}
