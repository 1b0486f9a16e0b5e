package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// An access mode is fixed when the volume is created: an apply that
// changes it is refused whole, by Validate as by ApplyAll, and re-applying
// the same mode is "unchanged".
func TestAccessModeFixedAtCreation(t *testing.T) {
	r := newRig(t)
	r.volume("x", cloud.MultiNode)
	batch := []Change{
		{Volume: &store.VolumeSpec{ID: "y", Mode: cloud.Exclusive}},
		{Volume: &store.VolumeSpec{ID: "x", Mode: cloud.Exclusive}},
	}
	for name, apply := range map[string]func() error{
		"Validate": func() error { return r.ctl.Validate(batch) },
		"ApplyAll": func() error { _, err := r.ctl.ApplyAll(batch); return err },
	} {
		err := apply()
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: err = %v, want ErrInvalid", name, err)
		}
		for _, want := range []string{"document 2", `volume "x"`, "ReadWriteMany", "ReadWriteOnce", "delete volume/x"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not mention %q", name, err, want)
			}
		}
	}
	if _, ok, _ := r.store.Volume("y"); ok {
		t.Error("y stored by a refused apply")
	}
	if v, _, _ := r.store.Volume("x"); v.Mode != cloud.MultiNode {
		t.Errorf("x is %v", v.Mode)
	}
	same := []Change{{Volume: &store.VolumeSpec{ID: "x", Mode: cloud.MultiNode}}, {Node: &store.NodeSpec{Name: "n1"}}}
	if err := r.ctl.Validate(same); err != nil {
		t.Fatal(err)
	}
	got, err := r.ctl.ApplyAll(same)
	if err != nil || !slices.Equal(got, []string{"volume/x unchanged", "node/n1 created"}) {
		t.Fatalf("ApplyAll = %v, %v", got, err)
	}
	if got, _ := r.ctl.ApplyAll(same[1:]); !slices.Equal(got, []string{"node/n1 unchanged"}) {
		t.Fatalf("re-apply node: %v", got)
	}
}
