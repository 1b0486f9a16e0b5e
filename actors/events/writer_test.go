package events

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/cloud/testkit"
)

// fakeLog records each AppendEvents call; while gated, a call waits for
// the gate (a slow store) after telling entered.
type fakeLog struct {
	mu      sync.Mutex
	batches [][]Event
	fail    error
	gate    chan struct{}
	entered chan struct{}
}

func (f *fakeLog) AppendEvents(ctx context.Context, evs []Event) error {
	if f.gate != nil {
		f.entered <- struct{}{}
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.batches = append(f.batches, append([]Event(nil), evs...))
	return nil
}

func (f *fakeLog) ListEvents(context.Context, Query) ([]Event, uint64, error) { return nil, 0, nil }
func (f *fakeLog) WatchEvents(context.Context, Query, uint64, func(Event)) error {
	return nil
}

func (f *fakeLog) sizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, b := range f.batches {
		out = append(out, len(b))
	}
	return out
}

func waitEntered(t *testing.T, f *fakeLog) {
	t.Helper()
	select {
	case <-f.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not call the log within 10 s")
	}
}

func vol(msg string) Event {
	return Event{Object: Ref{Kind: KindVolume, Name: "v1"}, Type: "T", Message: msg}
}

// While a transaction is in flight, events queue; the next transaction
// takes them all (up to Batch): one per flush, not one per event.
func TestWriterBatches(t *testing.T) {
	f := &fakeLog{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	w := NewWriter(f, WriterConfig{Batch: 4})
	w.Offer(vol("first"))
	waitEntered(t, f)
	for range 6 {
		w.Offer(vol("queued"))
	}
	close(f.gate) // from now on no call waits
	go func() {
		for range f.entered {
		}
	}()
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	close(f.entered)
	got := f.sizes()
	if len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 2 {
		t.Errorf("transactions of %v events, want [1 4 2]", got)
	}
	if s := w.Stats(); s.Written != 7 || s.Flushes != 3 || s.Dropped != 0 {
		t.Errorf("stats %+v, want 7 written in 3 flushes", s)
	}
}

// A log that does not answer never makes Offer wait: beyond the queue,
// events are dropped and counted.
func TestWriterDropsWhenTheLogIsSlow(t *testing.T) {
	f := &fakeLog{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	w := NewWriter(f, WriterConfig{Queue: 2})
	w.Offer(vol("in flight"))
	waitEntered(t, f)
	ok := []bool{w.Offer(vol("q1")), w.Offer(vol("q2")), w.Offer(vol("dropped"))}
	if !ok[0] || !ok[1] || ok[2] {
		t.Errorf("offers returned %v, want [true true false]", ok)
	}
	if s := w.Stats(); s.Dropped != 1 {
		t.Errorf("dropped %d, want 1", s.Dropped)
	}
	close(f.gate)
	go func() {
		for range f.entered {
		}
	}()
	w.Close()
	close(f.entered)
	if s := w.Stats(); s.Written != 3 {
		t.Errorf("written %d after Close, want 3 (Close flushes the queue)", s.Written)
	}
	if w.Offer(vol("late")) || w.Stats().Dropped != 2 {
		t.Errorf("an offer after Close was not dropped: %+v", w.Stats())
	}
}

// A failed transaction loses its events, counted and told.
func TestWriterCountsFailures(t *testing.T) {
	f := &fakeLog{fail: errors.New("etcd down")}
	var told []int
	w := NewWriter(f, WriterConfig{OnError: func(_ error, lost int) { told = append(told, lost) }})
	w.Offer(vol("a"))
	w.Offer(vol("b"))
	w.Close()
	if s := w.Stats(); s.Failed != 2 || s.Written != 0 {
		t.Errorf("stats %+v, want 2 failed", s)
	}
	sum := 0
	for _, n := range told {
		sum += n
	}
	if sum != 2 {
		t.Errorf("OnError told of %d lost, want 2", sum)
	}
}

// The recorder hands its log the events it keeps: not those of a
// forgotten incarnation.
func TestRecorderPersistsKeptEvents(t *testing.T) {
	f := &fakeLog{}
	w := NewWriter(f, WriterConfig{})
	r := NewRecorder(10)
	r.Persist(w)
	r.Record(Event{Object: Ref{Kind: KindVolume, Name: "v1", UID: "old"}, Type: "T", Message: "kept"})
	r.Forget(Ref{Kind: KindVolume, Name: "v1", UID: "old"})
	r.Record(Event{Object: Ref{Kind: KindVolume, Name: "v1", UID: "old"}, Type: "T", Message: "late"})
	r.Record(Event{Object: Ref{Kind: KindVolume, Name: "v1", UID: "new"}, Type: "T", Message: "next"})
	w.Close()
	var got []string
	for _, b := range f.batches {
		for _, e := range b {
			got = append(got, e.Message)
		}
	}
	if len(got) != 2 || got[0] != "kept" || got[1] != "next" {
		t.Errorf("persisted %v, want [kept next]", got)
	}
}

// Close writes everything queued before it returns, even what queued
// behind a slow transaction (each run leaves 4 events queued when Close
// starts; a writer that stopped without draining would keep one only by
// luck, 1 in 16 per run).
func TestWriterCloseFlushesQueue(t *testing.T) {
	for run := range 4 {
		f := &fakeLog{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
		w := NewWriter(f, WriterConfig{Batch: 1})
		for range 5 {
			w.Offer(vol("e"))
		}
		waitEntered(t, f)
		closed := make(chan struct{})
		go func() { w.Close(); close(closed) }()
		testkit.Eventually(t, 10*time.Second, w.closing, "Close started")
		close(f.gate)
		go func() {
			for range f.entered {
			}
		}()
		<-closed
		close(f.entered)
		if s := w.Stats(); s.Written != 5 {
			t.Fatalf("run %d: %d of 5 events written by Close", run, s.Written)
		}
	}
}
