package events

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tether/tether/actors/runtime/heapstat"
)

// What is read is what was recorded, as kept in its compact form.
func TestRecorderReadsBackWhatItKept(t *testing.T) {
	r := NewRecorder(5)
	at := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	in := []Event{
		{Time: at, Object: Ref{Kind: KindVolume, Name: "v1", UID: "u1"}, Type: "SuccessfulAttachVolume", Node: "n1", Message: "attached"},
		{Object: Ref{Kind: KindVolume, Name: "v1"}, Type: "Multi-Attach", Warning: true, Message: "no time, no UID"},
	}
	for _, e := range in {
		r.Record(e)
	}
	got := r.For(Ref{Kind: KindVolume, Name: "v1"})
	if len(got) != 2 {
		t.Fatalf("For = %+v, want 2 events", got)
	}
	for i, e := range got {
		w := in[i]
		if !e.Time.Equal(w.Time) || e.Time.IsZero() != w.Time.IsZero() || e.Object != w.Object || e.Type != w.Type ||
			e.Node != w.Node || e.Warning != w.Warning || e.Message != w.Message {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
	if got[0].Time.UnixNano() != at.UnixNano() {
		t.Errorf("time %d, want %d", got[0].Time.UnixNano(), at.UnixNano())
	}
	if got := r.For(Ref{Kind: KindNode, Name: "v1"}); len(got) != 0 {
		t.Errorf("a node named as the volume: %+v, want nothing (kinds are apart)", got)
	}
	if got := r.For(Ref{Kind: KindVolume, Name: "v1", UID: "u1"}); len(got) != 1 || got[0].Message != "attached" {
		t.Errorf("For(u1) = %+v", got)
	}
	if r.Count("Multi-Attach") != 1 || r.Count("Unknown") != 0 {
		t.Errorf("counts: %d, %d", r.Count("Multi-Attach"), r.Count("Unknown"))
	}
}

// A list never holds more room than it needs: one record for an object
// with one event, at most the bound for one with many.
func TestRecorderListsDoNotOverAllocate(t *testing.T) {
	r := NewRecorder(5)
	one, many := Ref{Kind: KindVolume, Name: "one"}, Ref{Kind: KindVolume, Name: "many"}
	r.Record(Event{Object: one})
	for i := range 12 {
		r.Record(Event{Object: many, Message: fmt.Sprint(i)})
	}
	m := r.byObject.of(KindVolume, false)
	if l := m["one"]; len(l) != 1 || cap(l) != 1 {
		t.Errorf("one event: len %d cap %d, want 1 and 1", len(l), cap(l))
	}
	if l := m["many"]; len(l) != 5 || cap(l) != 5 {
		t.Errorf("12 events, 5 kept: len %d cap %d, want 5 and 5", len(l), cap(l))
	}
	if got := messages(r.For(many)); got != "7891011" {
		t.Errorf("kept %q, want the last five", got)
	}
}

// What an object's event costs the recorder (its strings are the
// caller's): about 130 bytes, where an Event in a map keyed by Ref cost
// about 240.
func TestRecorderCostPerObject(t *testing.T) {
	const n = 20000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("v%06d", i)
	}
	uid, msg, now := "0123456789abcdef", "AttachVolume.Attach succeeded", time.Now()
	before := heapstat.Live()
	r := NewRecorder(100)
	for _, name := range names {
		r.Record(Event{Time: now, Object: Ref{Kind: KindVolume, Name: name, UID: uid}, Type: "SuccessfulAttachVolume", Node: "n1", Message: msg})
	}
	per := float64(int64(heapstat.Live())-int64(before)) / n
	runtime.KeepAlive(r)
	if per > 160 {
		t.Errorf("%.0f bytes per object with one event, want at most 160", per)
	}
	t.Logf("%.0f bytes per object with one event", per)
}
