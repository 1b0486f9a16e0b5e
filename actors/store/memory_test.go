package store

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

func TestDesiredNodesFollowWorkloadOrder(t *testing.T) {
	m := NewMemory()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.PutWorkload(Workload{UID: "b", Node: "n2", Volumes: []cloud.VolumeID{"v1"}}))
	must(m.PutWorkload(Workload{UID: "a", Node: "n1", Volumes: []cloud.VolumeID{"v1", "v2"}}))
	must(m.PutWorkload(Workload{UID: "c", Node: "n2", Volumes: []cloud.VolumeID{"v1"}}))
	got, _ := m.DesiredNodes("v1")
	if want := []cloud.NodeName{"n2", "n1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DesiredNodes(v1) = %v, want %v (creation order, no repeats)", got, want)
	}
	// Replacing a workload keeps its place; moving it off a volume unindexes it.
	must(m.PutWorkload(Workload{UID: "b", Node: "n3", Volumes: []cloud.VolumeID{"v2"}}))
	got, _ = m.DesiredNodes("v1")
	if want := []cloud.NodeName{"n1", "n2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after moving b: DesiredNodes(v1) = %v, want %v", got, want)
	}
	got, _ = m.DesiredNodes("v2")
	if want := []cloud.NodeName{"n3", "n1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DesiredNodes(v2) = %v, want %v", got, want)
	}
	on, _ := m.WorkloadsOn("n2")
	if len(on) != 1 || on[0].UID != "c" {
		t.Fatalf("WorkloadsOn(n2) = %+v, want only c (b moved to n3)", on)
	}
	must(m.DeleteWorkload("a"))
	must(m.DeleteWorkload("c"))
	if got, _ := m.DesiredNodes("v1"); len(got) != 0 {
		t.Fatalf("DesiredNodes(v1) = %v after deleting its workloads", got)
	}
	if err := m.PutWorkload(Workload{}); err == nil {
		t.Fatal("workload without UID accepted")
	}
}

func TestNodeStatusWritesAreAtomicAndCopied(t *testing.T) {
	m := NewMemory()
	st := nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}}
	if err := m.PutNodeStatus(st); err != nil {
		t.Fatal(err)
	}
	st.VolumesAttached["v2"] = "/dev/b" // the caller's map is not the store's
	m.FailNodeStatusWrites(1)
	if err := m.PutNodeStatus(nodestatus.Status{Name: "n1"}); !errors.Is(err, ErrInjected) {
		t.Fatalf("err = %v, want ErrInjected", err)
	}
	got, ok, _ := m.NodeStatus("n1")
	if !ok || len(got.VolumesAttached) != 1 {
		t.Fatalf("status = %+v, want the first write intact", got)
	}
	with, _ := m.StatusesWithVolume("v1")
	without, _ := m.StatusesWithVolume("v2")
	if len(with) != 1 || len(without) != 0 {
		t.Fatalf("StatusesWithVolume: v1 %d, v2 %d; want 1, 0", len(with), len(without))
	}
}
