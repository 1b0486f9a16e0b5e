// Package events keeps what an operator reads about an object (tether
// describe): Kubernetes-style events (SuccessfulAttachVolume, Multi-Attach,
// ...), the most recent ones per object, in memory. It never decides
// anything; actors record, operators and tests read.
package events

import (
	"sync"
	"time"
)

// Kind of object an event is about.
type Kind string

const (
	KindVolume   Kind = "volume"
	KindNode     Kind = "node"
	KindWorkload Kind = "workload"
)

// Ref names an object.
type Ref struct {
	Kind Kind
	Name string
}

// Event is one record.
type Event struct {
	Time    time.Time
	Object  Ref
	Type    string // SuccessfulAttachVolume, Multi-Attach, ...
	Node    string // the node concerned, if any
	Warning bool
	Message string
}

// Recorder keeps the last PerObject events of each object and counts all
// events by type. Safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	perObject int
	byObject  map[Ref][]Event
	counts    map[string]int
	subs      []func(Event)
}

// NewRecorder keeps perObject events per object (at least 1).
func NewRecorder(perObject int) *Recorder {
	return &Recorder{perObject: max(1, perObject), byObject: map[Ref][]Event{}, counts: map[string]int{}}
}

// Record stores e and hands it to subscribers.
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	list := append(r.byObject[e.Object], e)
	if len(list) > r.perObject {
		list = append(list[:0:0], list[len(list)-r.perObject:]...)
	}
	r.byObject[e.Object] = list
	r.counts[e.Type]++
	subs := r.subs
	r.mu.Unlock()
	for _, f := range subs {
		f(e)
	}
}

// Subscribe calls f for every later event, on the recording goroutine: f
// must not block.
func (r *Recorder) Subscribe(f func(Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, f)
}

// For returns the recent events of one object, oldest first.
func (r *Recorder) For(ref Ref) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.byObject[ref]...)
}

// Count returns how many events of a type were recorded in all.
func (r *Recorder) Count(typ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[typ]
}
