package volume

import (
	"slices"
	"testing"
)

// attachments behaves as a map from node to attachment whose keys come
// out sorted, and keeps nothing once empty.
func TestAttachments(t *testing.T) {
	var s attachments
	a, b, c := &Attachment{}, &Attachment{}, &Attachment{}
	s.put("n2", b)
	s.put("n3", c)
	s.put("n1", a)
	if got := s.nodes(); !slices.Equal(got, []NodeName{"n1", "n2", "n3"}) {
		t.Fatalf("nodes = %v, want n1 n2 n3", got)
	}
	for n, want := range map[NodeName]*Attachment{"n1": a, "n2": b, "n3": c, "n0": nil, "n4": nil} {
		if got := s.get(n); got != want {
			t.Errorf("get(%s) = %p, want %p", n, got, want)
		}
	}
	d := &Attachment{}
	s.put("n2", d)
	if s.get("n2") != d || len(s) != 3 {
		t.Errorf("put over n2: get %p (want %p), len %d (want 3)", s.get("n2"), d, len(s))
	}
	nodes := s.nodes()
	s.remove("n2")
	s.remove("n9") // absent: nothing happens
	if got := s.nodes(); !slices.Equal(got, []NodeName{"n1", "n3"}) {
		t.Errorf("after removing n2: nodes = %v", got)
	}
	if !slices.Equal(nodes, []NodeName{"n1", "n2", "n3"}) {
		t.Errorf("a list taken before the removal changed: %v", nodes)
	}
	s.remove("n1")
	s.remove("n3")
	if s != nil {
		t.Errorf("empty attachments keep %d slots", cap(s))
	}
}
