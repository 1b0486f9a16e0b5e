package store

import (
	"context"
	"sync"

	"github.com/tether/tether/actors/events"
)

// MemoryEvents is an event log in memory (tests, and tether up without a
// data directory): the rules of the durable ones, none of their
// durability.
type MemoryEvents struct {
	opts   EventOptions
	notify notifier

	mu   sync.Mutex
	seq  uint64
	list []memEvent // oldest first
	// counts: how many events of each object list holds, so that an
	// append prunes only when an object has gone over PerObject (a pass
	// over the whole log on every append made a fleet's events quadratic).
	counts map[eventObject]int
}

// eventObject is the object an event is about.
type eventObject struct {
	k events.Kind
	n string
}

type memEvent struct {
	seq uint64
	e   events.Event
}

var _ events.Log = (*MemoryEvents)(nil)
var _ events.Sweeper = (*MemoryEvents)(nil)

// NewMemoryEvents returns an empty log; opts must be valid (Validate).
func NewMemoryEvents(opts EventOptions) (*MemoryEvents, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &MemoryEvents{opts: opts.withDefaults()}, nil
}

// AppendEvents implements events.Log: all of evs or, if one is invalid,
// none.
func (m *MemoryEvents) AppendEvents(_ context.Context, evs []events.Event) error {
	for _, e := range evs {
		if err := checkEvent(e); err != nil {
			return err
		}
	}
	m.mu.Lock()
	if m.counts == nil {
		m.counts = map[eventObject]int{}
	}
	over := false
	for _, e := range evs {
		m.seq++
		m.list = append(m.list, memEvent{m.seq, e})
		key := eventObject{e.Object.Kind, e.Object.Name}
		m.counts[key]++
		over = over || m.counts[key] > m.opts.PerObject
	}
	if over {
		m.prune()
	}
	m.mu.Unlock()
	m.notify.notify()
	return nil
}

// prune drops the oldest events of objects over PerObject, and counts
// what is left.
func (m *MemoryEvents) prune() {
	count := map[eventObject]int{}
	drop := make([]bool, len(m.list))
	for i := len(m.list) - 1; i >= 0; i-- {
		o := m.list[i].e.Object
		key := eventObject{o.Kind, o.Name}
		count[key]++
		drop[i] = count[key] > m.opts.PerObject
		if drop[i] {
			count[key]--
		}
	}
	m.counts = count
	keep := m.list[:0]
	for i, me := range m.list {
		if !drop[i] {
			keep = append(keep, me)
		}
	}
	clear(m.list[len(keep):])
	m.list = keep
}

// SweepEvents implements events.Sweeper.
func (m *MemoryEvents) SweepEvents(context.Context) (int, error) {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := m.list[:0]
	for _, me := range m.list {
		if !m.opts.expired(me.e, now) {
			keep = append(keep, me)
		} else if key := (eventObject{me.e.Object.Kind, me.e.Object.Name}); m.counts[key] > 1 {
			m.counts[key]--
		} else {
			delete(m.counts, key)
		}
	}
	n := len(m.list) - len(keep)
	clear(m.list[len(keep):])
	m.list = keep
	return n, nil
}

// ListEvents implements events.Log; the cursor is the last event's
// sequence number.
func (m *MemoryEvents) ListEvents(_ context.Context, q events.Query) ([]events.Event, uint64, error) {
	if err := checkQuery(q); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	all := make([]events.Event, len(m.list))
	for i, me := range m.list {
		all[i] = me.e
	}
	seq := m.seq
	m.mu.Unlock()
	return m.opts.readFilter(all, q), seq, nil
}

// WatchEvents implements events.Log.
func (m *MemoryEvents) WatchEvents(ctx context.Context, q events.Query, cursor uint64, fn func(events.Event)) error {
	if err := checkQuery(q); err != nil {
		return err
	}
	for {
		wake := m.notify.wait()
		m.mu.Lock()
		var next []events.Event
		for _, me := range m.list {
			if me.seq > cursor && q.Matches(me.e) {
				next = append(next, me.e)
			}
		}
		if m.seq > cursor {
			cursor = m.seq
		}
		m.mu.Unlock()
		for _, e := range next {
			fn(e)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// notifier wakes every waiter when something was appended: wait returns a
// channel closed by the next notify.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
