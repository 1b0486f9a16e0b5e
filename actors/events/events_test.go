package events

import (
	"fmt"
	"testing"
)

func TestRecorderKeepsRecentPerObject(t *testing.T) {
	r := NewRecorder(3)
	v := Ref{KindVolume, "v1"}
	var seen int
	r.Subscribe(func(Event) { seen++ })
	for i := 0; i < 5; i++ {
		r.Record(Event{Object: v, Type: "A", Message: fmt.Sprint(i)})
	}
	r.Record(Event{Object: Ref{KindVolume, "v2"}, Type: "B"})
	got := r.For(v)
	if len(got) != 3 || got[0].Message != "2" || got[2].Message != "4" {
		t.Fatalf("For(v1) = %+v, want messages 2,3,4", got)
	}
	if r.Count("A") != 5 || r.Count("B") != 1 || seen != 6 {
		t.Fatalf("counts A=%d B=%d seen=%d", r.Count("A"), r.Count("B"), seen)
	}
}
