package controller

import (
	"errors"
	"fmt"
	"maps"
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
		"Validate": func() error { _, err := r.ctl.Validate(batch); return err },
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
	if _, err := r.ctl.Validate(same); err != nil {
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

// ReadOnlyMany is a mode of its own: stored as multi-node and read-only,
// named so, kept as any mode is (ReadWriteMany and ReadOnlyMany do not
// become each other), and only multi-node volumes are read-only.
func TestReadOnlyManyIsAMode(t *testing.T) {
	r := newRig(t)
	rox := store.VolumeSpec{ID: "ro", Mode: cloud.MultiNode, ReadOnly: true}
	rwx := store.VolumeSpec{ID: "rw", Mode: cloud.MultiNode}
	got, err := r.ctl.ApplyAll([]Change{{Volume: &rox}, {Volume: &rwx}})
	if err != nil || !slices.Equal(got, []string{"volume/ro created", "volume/rw created"}) {
		t.Fatalf("ApplyAll = %v, %v", got, err)
	}
	if v, _, _ := r.store.Volume("ro"); v.Mode != cloud.MultiNode || !v.ReadOnly {
		t.Fatalf("ro stored as %+v", v)
	}
	if got, _ := r.ctl.ApplyAll([]Change{{Volume: &rox}}); !slices.Equal(got, []string{"volume/ro unchanged"}) {
		t.Fatalf("re-apply: %v", got)
	}
	for _, tt := range []struct {
		name    string
		change  store.VolumeSpec
		mention []string
	}{
		{"ReadOnlyMany to ReadWriteMany", store.VolumeSpec{ID: "ro", Mode: cloud.MultiNode}, []string{`volume "ro" is ReadOnlyMany and cannot become ReadWriteMany`}},
		{"ReadWriteMany to ReadOnlyMany", store.VolumeSpec{ID: "rw", Mode: cloud.MultiNode, ReadOnly: true}, []string{`volume "rw" is ReadWriteMany and cannot become ReadOnlyMany`}},
		{"ReadOnlyMany to ReadWriteOnce", store.VolumeSpec{ID: "ro", Mode: cloud.Exclusive}, []string{"ReadOnlyMany and cannot become ReadWriteOnce"}},
		{"read-only exclusive", store.VolumeSpec{ID: "x", Mode: cloud.Exclusive, ReadOnly: true}, []string{`volume "x"`, "read-only is a mode of multi-node volumes", "ReadWriteOnce"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.ctl.ApplyAll([]Change{{Volume: &tt.change}})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			for _, want := range tt.mention {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not mention %q", err, want)
				}
			}
		})
	}
	if v, _, _ := r.store.Volume("ro"); !v.ReadOnly {
		t.Error("ro lost its read-only flag")
	}
	if v, _, _ := r.store.Volume("rw"); v.ReadOnly {
		t.Error("rw became read-only")
	}
	if _, ok, _ := r.store.Volume("x"); ok {
		t.Error("a read-only exclusive volume was stored")
	}
}

func TestModeName(t *testing.T) {
	for _, tt := range []struct {
		mode     cloud.AccessMode
		readOnly bool
		want     string
	}{
		{cloud.Exclusive, false, "ReadWriteOnce"},
		{cloud.Exclusive, true, "ReadWriteOnce"},
		{cloud.MultiNode, false, "ReadWriteMany"},
		{cloud.MultiNode, true, "ReadOnlyMany"},
	} {
		if got := ModeName(tt.mode, tt.readOnly); got != tt.want {
			t.Errorf("ModeName(%v, %v) = %q, want %q", tt.mode, tt.readOnly, got, tt.want)
		}
	}
}

// A workload gets a ReadOnlyMany volume read-only whatever it asks (as
// Kubernetes publishes a ReadOnlyMany volume to every pod), and any other
// volume as it asks; the workload itself is stored as applied.
func TestReadOnlyManyPublishedReadOnly(t *testing.T) {
	r := newRig(t)
	r.node("n1")
	w := store.Workload{UID: "app", Node: "n1", Volumes: []cloud.VolumeID{"ro", "rw", "x", "y"}, ReadOnly: []cloud.VolumeID{"y"}}
	if _, err := r.ctl.ApplyAll([]Change{
		{Volume: &store.VolumeSpec{ID: "ro", Mode: cloud.MultiNode, ReadOnly: true}},
		{Volume: &store.VolumeSpec{ID: "rw", Mode: cloud.MultiNode}},
		{Volume: &store.VolumeSpec{ID: "x", Mode: cloud.Exclusive}},
		{Volume: &store.VolumeSpec{ID: "y", Mode: cloud.Exclusive}},
		{Workload: &w},
		{Workload: &store.Workload{UID: "other", Node: "n1", Volumes: []cloud.VolumeID{"ro"}, ReadOnly: []cloud.VolumeID{"ro"}}},
	}); err != nil {
		t.Fatal(err)
	}
	msg, err := nodeWorkloads(r.ctl.env, "n1")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, spec := range msg.Workloads {
		for _, u := range spec.Volumes {
			got[spec.Uid+"/"+u.VolumeId] = u.ReadOnly
		}
	}
	want := map[string]bool{"app/ro": true, "app/rw": false, "app/x": false, "app/y": true, "other/ro": true}
	if !maps.Equal(got, want) {
		t.Errorf("read-only uses = %v, want %v", got, want)
	}
	if stored, _, _ := r.store.Workload("app"); !slices.Equal(stored.ReadOnly, []cloud.VolumeID{"y"}) {
		t.Errorf("app stored read-only %v, want it as applied", stored.ReadOnly)
	}
}

// noScan is a store whose whole-table reads fail.
type noScan struct{ *store.Memory }

func (noScan) Volumes() ([]store.VolumeSpec, error) {
	return nil, errors.New("a read of every volume")
}

// readOnlyMany finds the ReadOnlyMany volumes of a node's workloads, and
// reads only those, however many: it runs for every node on every change
// told to its agent, so a read of the whole fleet there is quadratic.
func TestReadOnlyManyOfWorkloads(t *testing.T) {
	for _, n := range []int{3, bulkTell + 6} {
		st := noScan{store.NewMemory()}
		w := store.Workload{UID: "app", Node: "n1"}
		want := map[cloud.VolumeID]bool{}
		for i := range n {
			v := store.VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%03d", i))}
			switch i % 3 {
			case 0:
				v.Mode = cloud.Exclusive
			case 1:
				v.Mode = cloud.MultiNode
			case 2:
				v.Mode, v.ReadOnly = cloud.MultiNode, true
				want[v.ID] = true
			}
			must(t, st.PutVolume(v))
			w.Volumes = append(w.Volumes, v.ID)
		}
		got, err := readOnlyMany(st, []store.Workload{w})
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("%d volumes: readOnlyMany = %v, %v; want %v", n, got, err, want)
		}
	}
}
