package process

import (
	"context"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// eventsOf lists the types of the events of one object, oldest first.
func eventsOf(t *testing.T, e *Embedded, kind events.Kind, name string) []events.Event {
	t.Helper()
	evs, _, err := e.Ctl().ListEvents(context.Background(), events.Query{Kind: kind, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func hasType(evs []events.Event, typ string) bool {
	for _, e := range evs {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// Events are in the store's file: a restarted tether up lists those its
// predecessor recorded (the controller's and the agents'), before it
// records anything of its own.
func TestEventsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cleanupMounts(t, dir)
	e, err := startDurable(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	running := e
	t.Cleanup(func() {
		if running != nil {
			_ = running.Stop()
		}
	})
	if err := e.Cloud.CreateVolumeChecked("data-1", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ctl().ApplyAll([]controller.Change{
		{Volume: &store.VolumeSpec{ID: "data-1", Mode: cloud.Exclusive}},
		{Workload: &store.Workload{UID: "app-1", Node: "n1", Volumes: []cloud.VolumeID{"data-1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		return hasType(eventsOf(t, e, events.KindVolume, "data-1"), "SuccessfulAttachVolume") &&
			hasType(eventsOf(t, e, events.KindWorkload, "app-1"), "SuccessfulMountVolume")
	}, "data-1 attached and app-1 mounted, in the event log")
	before := map[events.Kind][]events.Event{
		events.KindVolume:   eventsOf(t, e, events.KindVolume, "data-1"),
		events.KindWorkload: eventsOf(t, e, events.KindWorkload, "app-1"),
	}
	running = nil
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}

	e, err = startDurable(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	running = e
	for kind, name := range map[events.Kind]string{events.KindVolume: "data-1", events.KindWorkload: "app-1"} {
		after := eventsOf(t, e, kind, name)
		if len(after) < len(before[kind]) {
			t.Fatalf("%s %s after the restart: %d events, want the %d recorded before it at least", kind, name, len(after), len(before[kind]))
		}
		for i, want := range before[kind] {
			if got := after[i]; got.Type != want.Type || got.Message != want.Message || !got.Time.Equal(want.Time) || got.Object != want.Object {
				t.Errorf("%s %s event %d after the restart: %+v, want %+v", kind, name, i, got, want)
			}
		}
	}
}
