package events

import (
	"context"
	"slices"
)

// Log is the durable event log behind a Recorder: the store's
// (actors/store: bbolt in embedded mode, etcd in distributed mode, memory
// for tests). It keeps events for a TTL and at most a bound per object
// name, whoever recorded them, so every process reading it sees the same
// events, after restarts too.
type Log interface {
	// AppendEvents writes evs, oldest first, in one transaction.
	AppendEvents(ctx context.Context, evs []Event) error
	// ListEvents returns the events matching q, oldest first (the order
	// they were appended in), and a cursor for WatchEvents: the position
	// of the log the list was read at.
	ListEvents(ctx context.Context, q Query) (evs []Event, cursor uint64, err error)
	// WatchEvents calls fn, on one goroutine, for every event matching q
	// appended after cursor, oldest first, until ctx ends (it then
	// returns nil) or the log fails (it returns the error).
	WatchEvents(ctx context.Context, q Query, cursor uint64, fn func(Event)) error
}

// Sweeper is a Log that removes expired events itself when asked (bbolt:
// its TTL is a time-ordered key, not a lease). The Writer calls Sweep
// every WriterConfig.SweepEvery.
type Sweeper interface {
	SweepEvents(ctx context.Context) (removed int, err error)
}

// Query selects events: of one kind ("": every kind), of one name (""
// every name; only with a Kind), of one incarnation (UID; "": any).
type Query struct {
	Kind Kind
	Name string
	UID  string
}

// Matches reports whether e is selected by q.
func (q Query) Matches(e Event) bool {
	return (q.Kind == "" || e.Object.Kind == q.Kind) &&
		(q.Name == "" || e.Object.Name == q.Name) &&
		(q.UID == "" || e.Object.UID == q.UID)
}

// List returns the events matching q, oldest first: from the durable log
// once Persist gave the recorder one (with its cursor), else from memory
// (cursor 0).
func (r *Recorder) List(ctx context.Context, q Query) ([]Event, uint64, error) {
	r.mu.Lock()
	w := r.writer
	r.mu.Unlock()
	if w != nil {
		return w.log.ListEvents(ctx, q)
	}
	if q.Kind != "" && q.Name != "" {
		return r.For(Ref(q)), 0, nil
	}
	r.mu.Lock()
	var out []Event
	for _, ko := range r.byObject {
		for name, list := range ko.names {
			for _, rec := range list {
				if e := rec.event(ko.kind, name, &r.types); q.Matches(e) {
					out = append(out, e)
				}
			}
		}
	}
	r.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	return out, 0, nil
}

// Watch calls fn for every event matching q appended to the durable log
// after cursor (see Log.WatchEvents). Without a durable log it is an
// error: memory has no cursor to watch from.
func (r *Recorder) Watch(ctx context.Context, q Query, cursor uint64, fn func(Event)) error {
	r.mu.Lock()
	w := r.writer
	r.mu.Unlock()
	if w == nil {
		return errNoLog
	}
	return w.log.WatchEvents(ctx, q, cursor, fn)
}

// Persist hands every event the recorder keeps (not those of forgotten
// incarnations) to w as well, and makes List and Watch read w's log.
func (r *Recorder) Persist(w *Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writer = w
}
