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
//
// Every object of a fleet keeps an event at rest (a volume its
// SuccessfulAttachVolume, a workload its SuccessfulMountVolume), so what
// one costs is paid per volume: events are kept as records (record.go),
// not as Events, and turned back into Events when read.
type Recorder struct {
	mu        sync.Mutex
	perObject int
	byObject  objects
	types     types
	subs      []func(Event)
	writer    *Writer // nil: memory only (see Persist)
	// forgotten: UIDs whose events are not kept, at most forgottenMax;
	// order is their ring, next the oldest once it is full.
	forgotten map[string]bool
	order     []string
	next      int
}

// NewRecorder keeps perObject events per object (at least 1).
func NewRecorder(perObject int) *Recorder {
	return &Recorder{perObject: max(1, perObject), types: newTypes(), forgotten: map[string]bool{}}
}

// Record stores e, unless its incarnation was forgotten, and hands it to
// subscribers (forgotten or not).
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	typ := r.types.count(e.Type)
	var w *Writer
	if !r.forgotten[e.Object.UID] {
		m := r.byObject.of(e.Object.Kind, true)
		m[e.Object.Name] = appendBounded(m[e.Object.Name], toRecord(e, typ), r.perObject)
		w = r.writer
	}
	subs := r.subs
	r.mu.Unlock()
	if w != nil {
		w.Offer(e) // never blocks: a full queue drops and counts
	}
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
	for _, rec := range r.byObject.of(ref.Kind, false)[ref.Name] {
		if ref.UID == "" || rec.uid == ref.UID {
			out = append(out, rec.event(ref.Kind, ref.Name, &r.types))
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
	if m := r.byObject.of(ref.Kind, false); m != nil {
		list := m[ref.Name]
		keep := list[:0]
		for _, rec := range list {
			if ref.UID != "" && rec.uid != "" && rec.uid != ref.UID {
				keep = append(keep, rec)
			}
		}
		clear(list[len(keep):]) // drop what the removed records held
		if len(keep) == 0 {
			delete(m, ref.Name)
			r.byObject.dropEmpty(ref.Kind)
		} else {
			m[ref.Name] = keep
		}
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
	return r.types.total(typ)
}
