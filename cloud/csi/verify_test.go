package csi

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// The same world, seen through a driver that lists published nodes:
// tether attached a and b to node-1 and c to node-2; someone else
// published x (which tether does not know) to node-1; d and e are
// attached nowhere.
func TestVerificationByList(t *testing.T) {
	r := newRig(t, listByPage())
	ctx := t.Context()
	if got := r.p.Verification(); got != ByList {
		t.Fatalf("Verification = %v, want %v", got, ByList)
	}
	if got := r.p.Listing(); got != cloud.ListingMayOverstate {
		t.Errorf("Listing = %v, want %v: the spec lets published_node_ids name nodes not published to", got, cloud.ListingMayOverstate)
	}
	for _, v := range []string{"a", "b", "c", "d", "e", "x"} {
		r.d.AddVolume(v)
	}
	devA, _ := r.p.Attach(ctx, "a", id1)
	devB, _ := r.p.Attach(ctx, "b", id1)
	devC, _ := r.p.Attach(ctx, "c", id2)
	r.d.Publish("x", string(id1))

	lists := r.c.get("ListVolumes")
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
	if d := r.c.get("ListVolumes") - lists; d != 3 {
		t.Errorf("%d ListVolumes calls, want one paging loop of 3 pages", d)
	}
	if n := r.c.get("ControllerGetVolume"); n != 0 {
		t.Errorf("%d ControllerGetVolume calls, want none", n)
	}

	vols, err := r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1, id2, "node-9"})
	if err != nil {
		t.Fatal(err)
	}
	wantVols := map[cloud.InstanceID]map[cloud.VolumeID]string{
		id1: {"a": devA, "b": devB, "x": ""}, // x: attached, device unknown to this Provider
		id2: {"c": devC},
		// node-9: no node has it, absent.
	}
	if !reflect.DeepEqual(vols, wantVols) {
		t.Errorf("InstanceVolumes = %v\nwant %v", vols, wantVols)
	}
}

// Without LIST_VOLUMES_PUBLISHED_NODES the spec says the CO "MUST not
// interpret" published_node_ids, and real drivers fill it loosely: an
// empty string for a fresh volume, the last node that ran NodePublish
// for ever after. The Provider asks nothing and says so; the controller
// plugin's loose answers never reach tether.
func TestVerificationByRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  csitest.Config
	}{
		{"get volume, loose published nodes", csitest.Config{GetVolume: true, LoosePublishedNodes: true, ExtraPublishedNodeIDs: []string{"node-stale"}}},
		{"list without published nodes", csitest.Config{List: true, GetVolume: true, LoosePublishedNodes: true}},
		{"neither", csitest.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg)
			ctx := t.Context()
			if got := r.p.Verification(); got != ByRecord {
				t.Fatalf("Verification = %v, want %v", got, ByRecord)
			}
			if got := r.p.Listing(); got != cloud.ListingNone {
				t.Errorf("Listing = %v, want %v", got, cloud.ListingNone)
			}
			r.d.AddVolume("a")
			if _, err := r.p.Attach(ctx, "a", id1); err != nil {
				t.Fatal(err)
			}
			got, err := r.p.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{id1: {"a"}, id2: {"a"}})
			if cloud.Classify(err) != cloud.KindTerminal || !strings.Contains(err.Error(), "LIST_VOLUMES_PUBLISHED_NODES") {
				t.Errorf("VolumesAreAttached = %v, %v; want a terminal error naming LIST_VOLUMES_PUBLISHED_NODES", got, err)
			}
			vols, err := r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1})
			if cloud.Classify(err) != cloud.KindTerminal {
				t.Errorf("InstanceVolumes = %v, %v; want a terminal error", vols, err)
			}
			for _, m := range []string{"ListVolumes", "ControllerGetVolume"} {
				if n := r.c.get(m); n != 0 {
					t.Errorf("%d %s calls, want none: the answer is not to be interpreted", n, m)
				}
			}
		})
	}
}
