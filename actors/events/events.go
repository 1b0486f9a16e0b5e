// Package events keeps what an operator reads about an object (tether
// describe): Kubernetes-style events (SuccessfulAttachVolume, Multi-Attach,
// ...), the most recent ones per object, in memory. It never decides
// anything; actors record, operators and tests read.
//
// An object is a name and, since a name may be reused after a delete, an
// incarnation: the recorder of an event stamps the ObjectUID (actors/store)
// of the object it serves, readers ask for the current one, and a deleted
// incarnation is forgotten.
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

// Ref names an object. UID is its incarnation's ObjectUID; "" when the
// recorder does not know it (such events are never forgotten by UID and
// never shown for one).
type Ref struct {
	Kind Kind
	Name string
	UID  string
}

// key is a name without its incarnation: the history of a name is one list.
func (r Ref) key() Ref { return Ref{Kind: r.Kind, Name: r.Name} }

// forgottenMax bounds the UIDs remembered as forgotten (about 50 bytes
// each): an event that an actor records for an incarnation after its
// delete is dropped if fewer than this many deletes came in between, and
// otherwise kept until its name is forgotten again or its place in the
// list is taken.
const forgottenMax = 4096

// Event is one record.
type Event struct {
	Time    time.Time
	Object  Ref
	Type    string // SuccessfulAttachVolume, Multi-Attach, ...
	Node    string // the node concerned, if any
	Warning bool
	Message string
}

// Recorder keeps the last PerObject events of each name (of whatever
// incarnations) and counts all events by type. Safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	perObject int
	byObject  map[Ref][]Event // by Ref.key()
	counts    map[string]int
	subs      []func(Event)
	// forgotten: UIDs whose events are not kept, at most forgottenMax;
	// order is their ring, next the oldest once it is full.
	forgotten map[string]bool
	order     []string
	next      int
}

// NewRecorder keeps perObject events per object (at least 1).
func NewRecorder(perObject int) *Recorder {
	return &Recorder{perObject: max(1, perObject), byObject: map[Ref][]Event{}, counts: map[string]int{}, forgotten: map[string]bool{}}
}

// Record stores e, unless its incarnation was forgotten, and hands it to
// subscribers (forgotten or not).
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	if !r.forgotten[e.Object.UID] {
		k := e.Object.key()
		list := append(r.byObject[k], e)
		if len(list) > r.perObject {
			list = append(list[:0:0], list[len(list)-r.perObject:]...)
		}
		r.byObject[k] = list
	}
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

// For returns the recent events of one object, oldest first: those of
// ref.UID, or of every incarnation of the name if ref.UID is "".
func (r *Recorder) For(ref Ref) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.byObject[ref.key()] {
		if ref.UID == "" || e.Object.UID == ref.UID {
			out = append(out, e)
		}
	}
	return out
}

// Forget drops the events of a deleted object: those of ref.UID and those
// without a UID (or all of the name if ref.UID is ""). Later events of
// ref.UID are not kept (see forgottenMax); a new incarnation's are.
func (r *Recorder) Forget(ref Ref) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := ref.key()
	var keep []Event
	for _, e := range r.byObject[k] {
		if ref.UID != "" && e.Object.UID != "" && e.Object.UID != ref.UID {
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		delete(r.byObject, k)
	} else {
		r.byObject[k] = keep
	}
	if ref.UID == "" || r.forgotten[ref.UID] {
		return
	}
	r.forgotten[ref.UID] = true
	if len(r.order) < forgottenMax {
		r.order = append(r.order, ref.UID)
		return
	}
	delete(r.forgotten, r.order[r.next])
	r.order[r.next] = ref.UID
	r.next = (r.next + 1) % forgottenMax
}

// Count returns how many events of a type were recorded in all.
func (r *Recorder) Count(typ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[typ]
}
