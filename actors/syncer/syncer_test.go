package syncer

import (
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestBatches(t *testing.T) {
	tests := []struct {
		nodes []cloud.NodeName
		size  int
		want  [][]cloud.NodeName
	}{
		{nil, 3, nil},
		{[]cloud.NodeName{"c", "a", "b"}, 1, [][]cloud.NodeName{{"a"}, {"b"}, {"c"}}},
		{[]cloud.NodeName{"c", "a", "b", "d"}, 3, [][]cloud.NodeName{{"a", "b", "c"}, {"d"}}},
		{[]cloud.NodeName{"a", "b"}, 0, [][]cloud.NodeName{{"a"}, {"b"}}},
	}
	for _, tt := range tests {
		if got := Batches(tt.nodes, tt.size); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Batches(%v, %d) = %v, want %v", tt.nodes, tt.size, got, tt.want)
		}
	}
}

func TestCompare(t *testing.T) {
	believed := map[cloud.NodeName]map[cloud.VolumeID]string{
		"n1": {"v1": "/dev/a", "v2": "/dev/b"},
		"n2": {"v3": "/dev/c", "v5": "/dev/e", "v6": ""},
		"n3": {"v4": "/dev/d"}, // its call failed: absent from actual, no finding
	}
	actual := map[cloud.NodeName]map[cloud.VolumeID]string{
		"n1": {"v2": "/dev/b", "v9": "/dev/z"},
		// v5 was re-attached at another device: the cloud's device wins;
		// v6's device was never known: nothing to compare.
		"n2": {"v3": "/dev/c", "v5": "/dev/f", "v6": "/dev/g"},
	}
	want := []Finding{
		{Volume: "v1", Node: "n1"},
		{Volume: "v9", Node: "n1", Attached: true, DevicePath: "/dev/z"},
		{Volume: "v5", Node: "n2", Attached: true, DevicePath: "/dev/f", Moved: true},
	}
	if got := Compare(believed, actual); !reflect.DeepEqual(got, want) {
		t.Fatalf("Compare = %+v, want %+v", got, want)
	}
}
