package store

// The durable event log (events.Log) of each backend: Bolt (bolt_events.go),
// Etcd (etcd_events.go) and memory (memory_events.go). Events never decide
// anything (DESIGN.md): they live beside the desired state, not in it.
//
// Every backend keeps an event for EventOptions.TTL and keeps at most
// EventOptions.PerObject events of one object name (of whatever
// incarnations: the newest). Reads apply both rules exactly (an event past
// its TTL is not returned even before it is removed; only the newest
// PerObject of a name are), so what a reader sees does not depend on when
// the removal ran; removal keeps the storage bounded: etcd leases and
// pruning on write, Bolt's sweep and pruning on write.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tether/tether/actors/events"
)

// Defaults of EventOptions: Kubernetes' --event-ttl, and the per-object
// bound the in-memory recorder always had.
const (
	DefaultEventTTL        = time.Hour
	DefaultEventsPerObject = 100
	// MinEventTTL and MaxEventTTL bound EventOptions.TTL: etcd's leases
	// count whole seconds, and a log kept for longer than a year is a
	// mistake, not a choice.
	MinEventTTL        = time.Second
	MaxEventTTL        = 365 * 24 * time.Hour
	MaxEventsPerObject = 10_000
)

// EventOptions configure an event log.
type EventOptions struct {
	// TTL is how long an event is kept; 0: DefaultEventTTL.
	TTL time.Duration
	// PerObject is how many events of one object name are kept (the
	// newest); 0: DefaultEventsPerObject.
	PerObject int
	// Now is the clock that ages events (tests inject one); nil: time.Now.
	Now func() time.Time
}

// Validate checks the options (zero values stand for the defaults).
func (o EventOptions) Validate() error {
	if o.TTL != 0 && (o.TTL < MinEventTTL || o.TTL > MaxEventTTL) {
		return fmt.Errorf("store: event TTL %v: want between %v and %v", o.TTL, MinEventTTL, MaxEventTTL)
	}
	if o.PerObject < 0 || o.PerObject > MaxEventsPerObject {
		return fmt.Errorf("store: events per object %d: want between 1 and %d", o.PerObject, MaxEventsPerObject)
	}
	return nil
}

func (o EventOptions) withDefaults() EventOptions {
	if o.TTL == 0 {
		o.TTL = DefaultEventTTL
	}
	if o.PerObject == 0 {
		o.PerObject = DefaultEventsPerObject
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// eventRecord is an event as the logs store it (JSON).
type eventRecord struct {
	Nanos   int64  `json:"t,omitempty"` // 0: no time
	Kind    string `json:"k"`
	Name    string `json:"n"`
	UID     string `json:"u,omitempty"`
	Type    string `json:"y"`
	Node    string `json:"o,omitempty"`
	Warning bool   `json:"w,omitempty"`
	Message string `json:"m,omitempty"`
}

func encodeEvent(e events.Event) ([]byte, error) {
	r := eventRecord{Kind: string(e.Object.Kind), Name: e.Object.Name, UID: e.Object.UID, Type: e.Type, Node: e.Node, Warning: e.Warning, Message: e.Message}
	if !e.Time.IsZero() {
		r.Nanos = e.Time.UnixNano()
	}
	return json.Marshal(r)
}

func decodeEvent(b []byte) (events.Event, error) {
	var r eventRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return events.Event{}, fmt.Errorf("store: event record: %w", err)
	}
	var t time.Time
	if r.Nanos != 0 {
		t = time.Unix(0, r.Nanos)
	}
	return events.Event{Time: t, Object: events.Ref{Kind: events.Kind(r.Kind), Name: r.Name, UID: r.UID},
		Type: r.Type, Node: r.Node, Warning: r.Warning, Message: r.Message}, nil
}

// checkEvent refuses an event that cannot be keyed: a kind or name empty
// or holding a NUL or "/" (kind) that would run into another's key range.
func checkEvent(e events.Event) error {
	k, n := string(e.Object.Kind), e.Object.Name
	switch {
	case k == "" || n == "":
		return fmt.Errorf("store: event %s of %q/%q: the object's kind and name are required", e.Type, k, n)
	case containsAny(k, "/\x00") || containsAny(n, "\x00"):
		return fmt.Errorf("store: event %s of %q/%q: a kind holds no \"/\" or NUL, a name no NUL", e.Type, k, n)
	}
	return nil
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// expired reports whether e is past its TTL at now (an event without a
// time never is: its age is unknown).
func (o EventOptions) expired(e events.Event, now time.Time) bool {
	return !e.Time.IsZero() && !e.Time.After(now.Add(-o.TTL))
}

// readFilter is what every backend's reads apply to the events of a
// range, oldest first: the newest PerObject of each name, not expired,
// matching q.
func (o EventOptions) readFilter(all []events.Event, q events.Query) []events.Event {
	type obj struct {
		k events.Kind
		n string
	}
	seen := map[obj]int{}
	keep := make([]bool, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		e := all[i]
		key := obj{e.Object.Kind, e.Object.Name}
		if seen[key] >= o.PerObject {
			continue
		}
		seen[key]++
		keep[i] = true
	}
	now := o.Now()
	out := all[:0:0]
	for i, e := range all {
		if keep[i] && q.Matches(e) && !o.expired(e, now) {
			out = append(out, e)
		}
	}
	return out
}

// checkQuery refuses a name without a kind.
func checkQuery(q events.Query) error {
	if q.Name != "" && q.Kind == "" {
		return fmt.Errorf("store: events of %q: a name needs its kind", q.Name)
	}
	return nil
}
