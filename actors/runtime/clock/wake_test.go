package clock

import (
	"slices"
	"testing"
	"time"
)

func TestKeepEarliest(t *testing.T) {
	t0 := time.Unix(100, 0)
	type eff struct {
		name string
		at   time.Time
	}
	at := func(e eff) (time.Time, bool) { return e.at, !e.at.IsZero() }
	wake := func(t time.Time) eff { return eff{name: "wake", at: t} }
	in := []eff{{at: t0.Add(3 * time.Second)}, {name: "a"}, {at: t0.Add(time.Second)}, {name: "b"}, {at: t0.Add(2 * time.Second)}}
	got := KeepEarliest(in, at, wake)
	want := []eff{{name: "a"}, {name: "b"}, {name: "wake", at: t0.Add(time.Second)}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := KeepEarliest([]eff{{name: "a"}}, at, wake); len(got) != 1 || got[0].name != "a" {
		t.Fatalf("without wake-ups: %v", got)
	}
}
