package csi

import (
	"context"
	"maps"
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// The same world, seen through both verification paths: tether attached
// a and b to node-1 and c to node-2; someone else published x (which
// tether does not know) to node-1; d and e are attached nowhere.
func TestVerification(t *testing.T) {
	tethers := func(context.Context) ([]cloud.VolumeID, error) {
		return []cloud.VolumeID{"a", "b", "c", "d", "e"}, nil
	}
	for _, tc := range []struct {
		name  string
		cfg   csitest.Config
		opts  []Option
		want  Verification
		calls map[string]int // driver calls per VolumesAreAttached below
		// InstanceVolumes sees x only through ListVolumes.
		seesX bool
	}{
		{name: "list with published nodes, paged", cfg: listByPage(), want: ByList,
			calls: map[string]int{"ListVolumes": 3, "ControllerGetVolume": 0}, seesX: true},
		{name: "get volume", cfg: csitest.Config{GetVolume: true}, opts: []Option{WithVolumes(tethers)}, want: ByGet,
			calls: map[string]int{"ListVolumes": 0, "ControllerGetVolume": 4}},
		{name: "list without published nodes falls back to get volume", cfg: csitest.Config{List: true, GetVolume: true},
			opts: []Option{WithVolumes(tethers)}, want: ByGet,
			calls: map[string]int{"ListVolumes": 0, "ControllerGetVolume": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg, tc.opts...)
			ctx := t.Context()
			if got := r.p.Verification(); got != tc.want {
				t.Fatalf("Verification = %v, want %v", got, tc.want)
			}
			for _, v := range []string{"a", "b", "c", "d", "e", "x"} {
				r.d.AddVolume(v)
			}
			devA, _ := r.p.Attach(ctx, "a", id1)
			devB, _ := r.p.Attach(ctx, "b", id1)
			devC, _ := r.p.Attach(ctx, "c", id2)
			r.d.Publish("x", string(id1))

			calls := map[string]int{"ListVolumes": r.c.get("ListVolumes"), "ControllerGetVolume": r.c.get("ControllerGetVolume")}
			got, err := r.p.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{
				id1:      {"a", "c", "x", "missing"},
				id2:      {"c", "a"},
				"node-9": {"a"}, // no such node: all false
			})
			if err != nil {
				t.Fatal(err)
			}
			want := map[cloud.InstanceID]map[cloud.VolumeID]bool{
				id1:      {"a": true, "c": false, "x": true, "missing": false},
				id2:      {"c": true, "a": false},
				"node-9": {"a": false},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("VolumesAreAttached = %v\nwant %v", got, want)
			}
			for m, n := range tc.calls {
				if d := r.c.get(m) - calls[m]; d != n {
					t.Errorf("%d %s calls, want %d", d, m, n)
				}
			}

			vols, err := r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1, id2, "node-9"})
			if err != nil {
				t.Fatal(err)
			}
			wantVols := map[cloud.InstanceID]map[cloud.VolumeID]string{
				id1: {"a": devA, "b": devB},
				id2: {"c": devC},
				// node-9: no node has it, absent.
			}
			if tc.seesX {
				wantVols[id1]["x"] = "" // attached, device unknown to this Provider
			}
			if !reflect.DeepEqual(vols, wantVols) {
				t.Errorf("InstanceVolumes = %v\nwant %v", vols, wantVols)
			}
		})
	}
}

// Without ListVolumes, InstanceVolumes cannot see what it is not told
// about: without WithVolumes it fails rather than answer "nothing".
func TestInstanceVolumesByGetNeedsVolumes(t *testing.T) {
	r := newRig(t, csitest.Config{GetVolume: true})
	r.d.AddVolume("a")
	attach("a", id1)(t, r)
	got, err := r.p.InstanceVolumes(t.Context(), []cloud.InstanceID{id1})
	if cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("InstanceVolumes = %v, %v; want a terminal error", got, err)
	}
	// VolumesAreAttached names its volumes: it needs no list.
	ok, err := r.p.VolumesAreAttached(t.Context(), map[cloud.InstanceID][]cloud.VolumeID{id1: {"a"}})
	if err != nil || !ok[id1]["a"] {
		t.Errorf("VolumesAreAttached = %v, %v", ok, err)
	}
}

// The volumes this Provider attached count, even when the list forgets
// them.
func TestInstanceVolumesByGetAddsAttached(t *testing.T) {
	r := newRig(t, csitest.Config{GetVolume: true}, WithVolumes(func(context.Context) ([]cloud.VolumeID, error) { return nil, nil }))
	r.d.AddVolume("a")
	dev, err := r.p.Attach(t.Context(), "a", id1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.p.InstanceVolumes(t.Context(), []cloud.InstanceID{id1, id2})
	if want := map[cloud.VolumeID]string{"a": dev}; err != nil || !maps.Equal(got[id1], want) || len(got[id2]) != 0 {
		t.Errorf("InstanceVolumes = %v, %v; want node-1: %v, node-2 empty", got, err, want)
	}
}
