package store

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestIntents(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, in := range []Intent{
			{Volume: "v1", Node: "n2", Op: 1, Attach: true, Deadline: at},
			{Volume: "v1", Node: "n1", Op: 2, Deadline: at},
			{Volume: "v10", Node: "n1", Op: 3, Attach: true, Deadline: at},   // another volume sharing the prefix
			{Volume: "v1", Node: "n2", Op: 4, Deadline: at.Add(time.Second)}, // replaces op 1
		} {
			if err := s.PutIntent(in); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Intents("v1")
		if err != nil {
			t.Fatal(err)
		}
		want := []Intent{{Volume: "v1", Node: "n1", Op: 2, Deadline: at}, {Volume: "v1", Node: "n2", Op: 4, Deadline: at.Add(time.Second)}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Intents(v1) = %+v, want %+v", got, want)
		}
		if got, _ := s.Intents("nope"); len(got) != 0 {
			t.Fatalf("Intents(nope) = %+v", got)
		}
	})
}

func TestIntentsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b := openBolt(t, path)
	in := Intent{Volume: "v", Node: "n", Op: 7, Attach: true, Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := b.PutIntent(in); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := openBolt(t, path).Intents("v")
	if err != nil || len(got) != 1 || !got[0].Deadline.Equal(in.Deadline) || got[0].Op != 7 || !got[0].Attach {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}
