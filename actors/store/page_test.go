package store

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestPagesByName(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		for _, name := range []string{"c", "a", "e", "b", "d"} {
			must(t, s.Apply([]Op{
				{PutWorkload: &Workload{UID: name, Node: "n1"}},
				{PutVolume: &VolumeSpec{ID: cloud.VolumeID("v-" + name)}},
				{PutNode: &NodeSpec{Name: cloud.NodeName("n-" + name)}},
			}))
		}
		names := func(ws []Workload, err error) string {
			must(t, err)
			out := ""
			for _, w := range ws {
				out += w.UID
			}
			return out
		}
		if got := names(s.WorkloadsAfter("", 2)); got != "ab" {
			t.Fatalf("first page = %q, want ab", got)
		}
		// Between pages: "b" (the cursor) deleted, "bb" created after it,
		// "a" (already listed) deleted: the next page resumes after "b".
		must(t, s.Apply([]Op{{DeleteWorkload: "b"}, {DeleteWorkload: "a"}, {PutWorkload: &Workload{UID: "bb", Node: "n1"}}}))
		if got := names(s.WorkloadsAfter("b", 2)); got != "bbc" {
			t.Fatalf("second page = %q, want bbc", got)
		}
		if got := names(s.WorkloadsAfter("c", 0)); got != "de" {
			t.Fatalf("rest = %q, want de", got)
		}
		if got := names(s.WorkloadsAfter("e", 5)); got != "" {
			t.Fatalf("after the last = %q, want nothing", got)
		}
		vols, err := s.VolumesAfter("v-b", 2)
		must(t, err)
		nodes, err := s.NodesAfter("n-d", -1)
		must(t, err)
		if got := fmt.Sprintf("%s %s %d %s %d", vols[0].ID, vols[1].ID, len(vols), nodes[0].Name, len(nodes)); got != "v-c v-d 2 n-e 1" {
			t.Fatalf("volumes, nodes = %+v, %+v", vols, nodes)
		}
		// The page's objects are the store's, UIDs included.
		w, _, _ := s.Workload("d")
		page, _ := s.WorkloadsAfter("c", 1)
		if !reflect.DeepEqual(page, []Workload{w}) {
			t.Fatalf("page %+v, want %+v", page, w)
		}
	})
}
