package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// Validate then Commit validates a batch once; a Commit that an apply
// raced (the desired state changed in between) validates it again and
// refuses what is no longer valid; a Commit of a batch Validate did not
// accept is refused.
func TestValidateThenCommit(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	r.cloud.CreateVolume("v1", cloud.Exclusive)
	r.cloud.CreateVolume("v9", cloud.Exclusive)
	batch := []Change{{Volume: &store.VolumeSpec{ID: "v1", Mode: cloud.Exclusive}}, {Workload: &store.Workload{UID: "w1", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}}}
	before := r.ctl.Validations()
	v, err := r.ctl.Validate(batch)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := r.ctl.Commit(v)
	if err != nil || strings.Join(applied, ", ") != "volume/v1 created, workload/w1 created" {
		t.Fatalf("Commit = %q, %v", applied, err)
	}
	if n := r.ctl.Validations() - before; n != 1 {
		t.Fatalf("Validate and Commit validated %d times, want once", n)
	}

	// Raced: v9 is made exclusive between the Validate of a multi-node
	// v9 and its Commit. Without a second validation the mode would change.
	v, err = r.ctl.Validate([]Change{{Volume: &store.VolumeSpec{ID: "v9", Mode: cloud.MultiNode}}})
	if err != nil {
		t.Fatal(err)
	}
	must(t, r.ctl.ApplyVolume(store.VolumeSpec{ID: "v9", Mode: cloud.Exclusive}))
	before = r.ctl.Validations()
	if _, err := r.ctl.Commit(v); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cannot become ReadWriteMany") {
		t.Fatalf("raced Commit: %v, want the mode change refused", err)
	}
	if got, _, _ := r.store.Volume("v9"); got.Mode != cloud.Exclusive {
		t.Fatalf("raced Commit changed v9 to %v", got.Mode)
	}
	if n := r.ctl.Validations() - before; n != 1 {
		t.Fatalf("raced Commit validated %d times, want once more", n)
	}

	if _, err := r.ctl.Commit(Validated{}); !errors.Is(err, errNotValidated) {
		t.Fatalf("Commit of a batch Validate did not make: %v", err)
	}
}
