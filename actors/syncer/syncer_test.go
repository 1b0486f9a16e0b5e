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
	believed := map[cloud.NodeName]map[cloud.VolumeID]bool{
		"n1": {"v1": true, "v2": true},
		"n2": {"v3": true},
		"n3": {"v4": true}, // its call failed: absent from actual, no finding
	}
	actual := map[cloud.NodeName]map[cloud.VolumeID]string{
		"n1": {"v2": "/dev/b", "v9": "/dev/z"},
		"n2": {"v3": "/dev/c"},
	}
	want := []Finding{
		{Volume: "v1", Node: "n1"},
		{Volume: "v9", Node: "n1", Attached: true, DevicePath: "/dev/z"},
	}
	if got := Compare(believed, actual); !reflect.DeepEqual(got, want) {
		t.Fatalf("Compare = %+v, want %+v", got, want)
	}
}
