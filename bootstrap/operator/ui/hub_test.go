package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
)

// startFake serves f with short periods; the hub stops at Cleanup.
func startFake(t *testing.T, f *fakeSource) *UI {
	t.Helper()
	u, err := Start(f, Options{Token: strings.Repeat("t", 64), Tick: 10 * time.Millisecond,
		NodeEvery: time.Hour, FullEvery: time.Hour, StatsEvery: time.Hour, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

// attach is a browser arriving, within a deadline.
func attach(t *testing.T, u *UI) *sub {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := u.hub.attach(ctx)
	if err != nil {
		t.Fatalf("the hub did not read the source within 10s: %v", err)
	}
	return s
}

// next reads s's next frame of the named kind (skipping others), within
// a deadline, and decodes its data into v.
func next(t *testing.T, s *sub, name string, v any) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f := <-s.ch:
			head, data, _ := bytes.Cut(f, []byte("\ndata: "))
			if string(head) != "event: "+name {
				continue
			}
			if err := json.Unmarshal(bytes.TrimSpace(data), v); err != nil {
				t.Fatalf("frame %s: %v", f, err)
			}
			return
		case <-deadline:
			t.Fatalf("no %s frame within 10s", name)
		}
	}
}

func stateOf(tl tile, vol string) string {
	for _, v := range tl.V {
		if v[0] == vol {
			return v[1]
		}
	}
	return ""
}

// A browser gets the fleet as read, then the tile of the node an event
// changed, read again from the source: the event names the volume, the
// hub reads it, the tile follows.
func TestHubSnapshotThenTiles(t *testing.T) {
	f := newFake()
	f.setNode("n1", NodeReady)
	f.setNode("n2", NodeReady)
	f.setVol("v1", map[string]string{"n1": VolMounted})
	u := startFake(t, f)
	s := attach(t, u)
	defer u.hub.unsubscribe(s)
	var snap snapshotJSON
	next(t, s, "snapshot", &snap)
	if len(snap.Nodes) != 2 || snap.Nodes[0].N != "n1" || stateOf(snap.Nodes[0], "v1") != VolMounted {
		t.Fatalf("snapshot %+v: want n1 (v1 mounted) and n2", snap.Nodes)
	}

	f.setVol("v1", map[string]string{"n1": VolDetaching})
	f.evs <- events.Event{Object: events.Ref{Kind: events.KindVolume, Name: "v1"}, Type: "SuccessfulDetachVolume", Node: "n1"}
	var ev eventJSON
	next(t, s, "event", &ev)
	if ev.Type != "SuccessfulDetachVolume" || ev.Name != "v1" {
		t.Errorf("event frame %+v", ev)
	}
	var tl tile
	next(t, s, "tile", &tl)
	if tl.N != "n1" || stateOf(tl, "v1") != VolDetaching {
		t.Fatalf("tile %+v: want n1 with v1 detaching", tl)
	}

	// Gone from n1, wanted on n2: both tiles change.
	f.setVol("v1", map[string]string{"n2": VolPending})
	f.evs <- events.Event{Object: events.Ref{Kind: events.KindVolume, Name: "v1"}, Type: "Multi-Attach", Node: "n2"}
	got := map[string]tile{}
	for len(got) < 2 || stateOf(got["n2"], "v1") != VolRefused {
		next(t, s, "tile", &tl)
		got[tl.N] = tl
	}
	if len(got["n1"].V) != 0 {
		t.Errorf("n1 still shows %v", got["n1"].V)
	}
	// Attached after all: no longer refused.
	f.setVol("v1", map[string]string{"n2": VolAttached})
	f.evs <- events.Event{Object: events.Ref{Kind: events.KindVolume, Name: "v1"}, Type: "SuccessfulAttachVolume", Node: "n2"}
	for stateOf(tl, "v1") != VolAttached {
		next(t, s, "tile", &tl)
	}

	// A node deleted: its tile goes.
	f.mu.Lock()
	delete(f.nodes, "n1")
	f.mu.Unlock()
	f.evs <- events.Event{Object: events.Ref{Kind: events.KindNode, Name: "n1"}, Type: "NodeDeleted"}
	var gone map[string]string
	next(t, s, "gone", &gone)
	if gone["n"] != "n1" {
		t.Errorf("gone %v, want n1", gone)
	}
}

// A browser that does not read is cut off (its stream ends; it will
// reconnect for a fresh snapshot) and the others are not held up.
func TestHubCutsOffSlowBrowser(t *testing.T) {
	f := newFake()
	f.setNode("n1", NodeReady)
	u := startFake(t, f)
	slow := attach(t, u)
	for i := 0; i <= subBuffer; i++ {
		u.Notice("kill", "volume actor v1")
	}
	select {
	case <-slow.gone:
	default:
		t.Fatalf("a browser %d frames behind was not cut off", subBuffer+1)
	}
	fresh := attach(t, u)
	defer u.hub.unsubscribe(fresh)
	var snap snapshotJSON
	next(t, fresh, "snapshot", &snap)
	if len(snap.Notices) != noticeLen {
		t.Errorf("snapshot repeats %d notices, want the newest %d", len(snap.Notices), noticeLen)
	}
}

// Stats frames carry calls per second between two readings.
func TestHubStatsRate(t *testing.T) {
	h := newHub(time.Now)
	s := h.subscribe()
	<-s.ch // snapshot
	prev := Stats{Calls: map[string]float64{"attach": 10, "detach": 4}}
	cur := Stats{Calls: map[string]float64{"attach": 30, "detach": 4}, InFlight: 3}
	h.sendStats(cur, prev, 2*time.Second)
	var st statsJSON
	next(t, s, "stats", &st)
	if st.Calls["attach"] != 10 || st.Calls["detach"] != 0 || st.InFlight != 3 || st.Total != 34 {
		t.Errorf("stats %+v: want attach 10/s, detach 0/s, 3 in flight, 34 in all", st)
	}
}

// While no browser watches, the hub reads nothing (events only mark what
// to read); the next browser gets a whole read, with what changed
// meanwhile.
func TestHubIdleReadsNothing(t *testing.T) {
	f := newFake()
	f.setNode("n1", NodeReady)
	f.setVol("v1", map[string]string{"n1": VolAttaching})
	u, err := Start(f, Options{Token: strings.Repeat("t", 64), Tick: time.Millisecond,
		NodeEvery: time.Millisecond, FullEvery: time.Millisecond, StatsEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	f.evs <- events.Event{Object: events.Ref{Kind: events.KindVolume, Name: "v1"}, Type: "SuccessfulAttachVolume"}
	f.setVol("v1", map[string]string{"n1": VolMounted})
	// Bounded: an idle hub's loop runs its (1 ms) timers many times over.
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		f.mu.Lock()
		reads := f.reads
		f.mu.Unlock()
		if reads != 0 {
			t.Fatalf("%d reads with no browser watching", reads)
		}
		runtime.Gosched()
	}
	s := attach(t, u)
	defer u.hub.unsubscribe(s)
	var snap snapshotJSON
	next(t, s, "snapshot", &snap)
	if len(snap.Nodes) != 1 || stateOf(snap.Nodes[0], "v1") != VolMounted {
		t.Fatalf("snapshot %+v: want n1 with v1 mounted", snap.Nodes)
	}
}
