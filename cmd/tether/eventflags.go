package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tether/tether/actors/store"
)

// eventFlags are the event log's flags, the same on tether up, tether
// controller and tether agent (every process that records events).
func eventFlags(f *pflag.FlagSet, o *store.EventOptions) {
	o.TTL, o.PerObject = store.DefaultEventTTL, store.DefaultEventsPerObject
	f.DurationVar(&o.TTL, "event-ttl", o.TTL, "how long events are kept in the store (tether get events, tether describe)")
	f.IntVar(&o.PerObject, "events-per-object", o.PerObject, "how many events of one object are kept (the newest)")
}

// eventFlags checks eventFlags' flags.
func (v *validator) eventFlags() {
	if d := v.duration("event-ttl"); d < store.MinEventTTL || d > store.MaxEventTTL {
		v.refuse("event-ttl", fmt.Sprintf("want %v to %v (default 1h, as Kubernetes)", store.MinEventTTL, store.MaxEventTTL))
	}
	v.count("events-per-object", 1, store.MaxEventsPerObject, "the newest events of each object are kept")
}
