package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

func TestNodeStatusRoundTrip(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	tests := []struct {
		name string
		put  nodestatus.Status
		want nodestatus.Status
	}{
		{"every field",
			nodestatus.Status{
				Name:             "n1",
				VolumesAttached:  map[cloud.VolumeID]string{"v1": "/dev/a", "v2": ""},
				VolumesInUse:     map[cloud.VolumeID]bool{"v1": true, "v3": false},
				VolumesDetaching: map[cloud.VolumeID]bool{"v4": true},
				NotReadySince:    since,
				OutOfService:     true,
			},
			nodestatus.Status{
				Name:             "n1",
				VolumesAttached:  map[cloud.VolumeID]string{"v1": "/dev/a", "v2": ""},
				VolumesInUse:     map[cloud.VolumeID]bool{"v1": true, "v3": false},
				VolumesDetaching: map[cloud.VolumeID]bool{"v4": true},
				NotReadySince:    since,
				OutOfService:     true,
			}},
		{"nil maps and a zero time come back as Clone makes them",
			nodestatus.Status{Name: "n2", Ready: true},
			nodestatus.Status{
				Name:             "n2",
				VolumesAttached:  map[cloud.VolumeID]string{},
				VolumesInUse:     map[cloud.VolumeID]bool{},
				VolumesDetaching: map[cloud.VolumeID]bool{},
				Ready:            true,
			}},
	}
	forEach(t, func(t *testing.T, s testStore) {
		for _, tt := range tests {
			must(t, s.PutNodeStatus(tt.put))
			got, ok, err := s.NodeStatus(tt.put.Name)
			if err != nil || !ok || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s: NodeStatus = %#v, %v, %v\nwant %#v", tt.name, got, ok, err, tt.want)
			}
			if !got.NotReadySince.Equal(tt.want.NotReadySince) || got.NotReadySince.IsZero() != tt.want.NotReadySince.IsZero() {
				t.Fatalf("%s: NotReadySince = %v, want %v", tt.name, got.NotReadySince, tt.want.NotReadySince)
			}
		}
		all, err := s.NodeStatuses()
		must(t, err)
		if want := []nodestatus.Status{tests[0].want, tests[1].want}; !reflect.DeepEqual(all, want) {
			t.Fatalf("NodeStatuses = %#v, want %#v", all, want)
		}
		// A write replaces the whole status.
		must(t, s.PutNodeStatus(nodestatus.Status{Name: "n1"}))
		if got, _, _ := s.NodeStatus("n1"); len(got.VolumesAttached)+len(got.VolumesInUse)+len(got.VolumesDetaching) != 0 || got.OutOfService || !got.NotReadySince.IsZero() {
			t.Fatalf("after overwrite: %#v", got)
		}
		if got, ok, err := s.NodeStatus("missing"); err != nil || ok || !reflect.DeepEqual(got, nodestatus.Status{}.Clone()) {
			t.Fatalf("NodeStatus(missing) = %#v, %v, %v", got, ok, err)
		}
	})
}

func TestStatusesWithVolume(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		for _, st := range []nodestatus.Status{
			{Name: "n3", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}},
			{Name: "n1", VolumesInUse: map[cloud.VolumeID]bool{"v1": true}},
			{Name: "n2", VolumesDetaching: map[cloud.VolumeID]bool{"v1": true}},
			{Name: "n4", VolumesInUse: map[cloud.VolumeID]bool{"v1": false}, VolumesDetaching: map[cloud.VolumeID]bool{"v1": false},
				VolumesAttached: map[cloud.VolumeID]string{"v2": "/dev/b"}},
		} {
			must(t, s.PutNodeStatus(st))
		}
		for vol, want := range map[cloud.VolumeID][]cloud.NodeName{"v1": {"n1", "n2", "n3"}, "v2": {"n4"}, "v3": nil} {
			sts, err := s.StatusesWithVolume(vol)
			must(t, err)
			var got []cloud.NodeName
			for _, st := range sts {
				got = append(got, st.Name)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("StatusesWithVolume(%s) = %v, want %v", vol, got, want)
			}
		}
		// A status written again without the volume no longer lists it;
		// one that takes a volume up lists it.
		must(t, s.PutNodeStatus(nodestatus.Status{Name: "n3", VolumesAttached: map[cloud.VolumeID]string{"v2": "/dev/c"}}))
		for vol, want := range map[cloud.VolumeID][]cloud.NodeName{"v1": {"n1", "n2"}, "v2": {"n3", "n4"}} {
			sts, err := s.StatusesWithVolume(vol)
			must(t, err)
			var got []cloud.NodeName
			for _, st := range sts {
				got = append(got, st.Name)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after n3 moved: StatusesWithVolume(%s) = %v, want %v", vol, got, want)
			}
		}
	})
}

func TestNodeStatusWritesAreAtomicAndCopied(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		st := nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}}
		must(t, s.PutNodeStatus(st))
		st.VolumesAttached["v2"] = "/dev/b" // the caller's map is not the store's
		s.FailNodeStatusWrites(1)
		if err := s.PutNodeStatus(nodestatus.Status{Name: "n1"}); !errors.Is(err, ErrInjected) {
			t.Fatalf("err = %v, want ErrInjected", err)
		}
		got, ok, _ := s.NodeStatus("n1")
		if !ok || len(got.VolumesAttached) != 1 {
			t.Fatalf("status = %+v, want the first write intact", got)
		}
		with, _ := s.StatusesWithVolume("v1")
		without, _ := s.StatusesWithVolume("v2")
		if len(with) != 1 || len(without) != 0 {
			t.Fatalf("StatusesWithVolume: v1 %d, v2 %d; want 1, 0", len(with), len(without))
		}
		must(t, s.PutNodeStatus(nodestatus.Status{Name: "n1"})) // one failure only
	})
}

// TestReturnedValuesAreCopies: neither the caller's values after a write
// nor the values a read returns share memory with the store.
func TestReturnedValuesAreCopies(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		w := Workload{UID: "a", Node: "n1", Volumes: []cloud.VolumeID{"v1"}, ReadOnly: []cloud.VolumeID{"v1"}}
		must(t, s.Apply([]Op{{PutWorkload: &w}}))
		w.Volumes[0], w.ReadOnly[0] = "x", "x"
		st := nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"},
			VolumesInUse: map[cloud.VolumeID]bool{"v1": true}, VolumesDetaching: map[cloud.VolumeID]bool{"v2": true}}
		must(t, s.PutNodeStatus(st))
		st.VolumesAttached["x"], st.VolumesInUse["x"], st.VolumesDetaching["x"] = "x", true, true
		before := snap(t, s)

		scribble := func(w Workload) { w.Volumes[0], w.ReadOnly[0] = "x", "x" }
		one, _, _ := s.Workload("a")
		scribble(one)
		all, _ := s.Workloads()
		scribble(all[0])
		on, _ := s.WorkloadsOn("n1")
		scribble(on[0])
		nodes, _ := s.DesiredNodes("v1")
		nodes[0] = "x"
		scribbleStatus := func(st nodestatus.Status) {
			st.VolumesAttached["x"], st.VolumesInUse["x"], st.VolumesDetaching["x"] = "x", true, true
		}
		got, _, _ := s.NodeStatus("n1")
		scribbleStatus(got)
		sts, _ := s.NodeStatuses()
		scribbleStatus(sts[0])
		sts, _ = s.StatusesWithVolume("v1")
		scribbleStatus(sts[0])

		if after := snap(t, s); !reflect.DeepEqual(after, before) {
			t.Fatalf("mutating returned values changed the store:\n before %+v\n after  %+v", before, after)
		}
		if got, _ := s.DesiredNodes("v1"); !reflect.DeepEqual(got, []cloud.NodeName{"n1"}) {
			t.Fatalf("DesiredNodes(v1) = %v", got)
		}
	})
}
