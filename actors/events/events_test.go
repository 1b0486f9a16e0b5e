package events

import (
	"fmt"
	"testing"
)

func TestRecorderKeepsRecentPerObject(t *testing.T) {
	r := NewRecorder(3)
	v := Ref{Kind: KindVolume, Name: "v1"}
	var seen int
	r.Subscribe(func(Event) { seen++ })
	for i := 0; i < 5; i++ {
		r.Record(Event{Object: v, Type: "A", Message: fmt.Sprint(i)})
	}
	r.Record(Event{Object: Ref{Kind: KindVolume, Name: "v2"}, Type: "B"})
	got := r.For(v)
	if len(got) != 3 || got[0].Message != "2" || got[2].Message != "4" {
		t.Fatalf("For(v1) = %+v, want messages 2,3,4", got)
	}
	if r.Count("A") != 5 || r.Count("B") != 1 || seen != 6 {
		t.Fatalf("counts A=%d B=%d seen=%d", r.Count("A"), r.Count("B"), seen)
	}
}

func messages(es []Event) string {
	out := ""
	for _, e := range es {
		out += e.Message
	}
	return out
}

// A name reused after a delete is another object: its history starts
// empty, and the deleted one's late events are not kept.
func TestRecorderForgetsDeletedIncarnations(t *testing.T) {
	r := NewRecorder(10)
	old := Ref{Kind: KindVolume, Name: "v1", UID: "old"}
	cur := Ref{Kind: KindVolume, Name: "v1", UID: "new"}
	var seen int
	r.Subscribe(func(Event) { seen++ })
	r.Record(Event{Object: old, Message: "a"})
	r.Record(Event{Object: Ref{Kind: KindVolume, Name: "v1"}, Message: "b"}) // no UID
	r.Forget(old)
	if got := messages(r.For(Ref{Kind: old.Kind, Name: old.Name})); got != "" {
		t.Fatalf("after Forget: %q, want nothing", got)
	}
	if len(r.byObject) != 0 {
		t.Fatalf("a forgotten name still holds memory: %v", r.byObject)
	}
	r.Record(Event{Object: cur, Message: "c"})
	r.Record(Event{Object: old, Message: "late"}) // the old actor, after the delete
	if got := messages(r.For(cur)); got != "c" {
		t.Fatalf("For(new) = %q, want c", got)
	}
	if got := messages(r.For(Ref{Kind: old.Kind, Name: old.Name})); got != "c" {
		t.Fatalf("For(name) = %q, want c (the late event of a forgotten UID is not kept)", got)
	}
	if seen != 4 {
		t.Fatalf("subscribers saw %d events, want all 4", seen)
	}
	// Forgetting the new one keeps nothing either.
	r.Forget(cur)
	if len(r.byObject) != 0 {
		t.Fatalf("byObject = %v after forgetting every incarnation", r.byObject)
	}
}

// The forgotten UIDs are bounded: the oldest leaves first.
func TestRecorderForgottenIsBounded(t *testing.T) {
	r := NewRecorder(1)
	for i := range forgottenMax + 2 {
		r.Forget(Ref{Kind: KindWorkload, Name: "w", UID: fmt.Sprint(i)})
	}
	if len(r.forgotten) != forgottenMax || r.forgotten["0"] || r.forgotten["1"] || !r.forgotten["2"] {
		t.Fatalf("%d forgotten UIDs (0: %v, 1: %v, 2: %v); want %d, the oldest two gone", len(r.forgotten), r.forgotten["0"], r.forgotten["1"], r.forgotten["2"], forgottenMax)
	}
}
