package main

import (
	"fmt"

	"github.com/tether/tether/bootstrap/process"
)

// eventFlags checks process.EventFlags' flags.
func (v *validator) eventFlags() {
	if d := v.duration("event-ttl"); d < process.MinEventTTL || d > process.MaxEventTTL {
		v.refuse("event-ttl", fmt.Sprintf("want %v to %v (default 1h, as Kubernetes)", process.MinEventTTL, process.MaxEventTTL))
	}
	v.count("events-per-object", 1, process.MaxEventsPerObject, "the newest events of each object are kept")
}
