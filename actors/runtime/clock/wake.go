package clock

import "time"

// KeepEarliest keeps, of the wake-up requests among effs (at recognises
// one and tells its time), only the earliest, moved to the end: an actor
// needs one timer, not one per blocked operation, and a later wake-up is
// asked for again by the Tick the earliest brings. It reuses effs' array
// and reads no clock, so pure state machines may call it.
func KeepEarliest[E any](effs []E, at func(E) (time.Time, bool), wake func(time.Time) E) []E {
	var earliest time.Time
	out := effs[:0]
	for _, e := range effs {
		if t, ok := at(e); ok {
			if earliest.IsZero() || t.Before(earliest) {
				earliest = t
			}
			continue
		}
		out = append(out, e)
	}
	if !earliest.IsZero() {
		out = append(out, wake(earliest))
	}
	return out
}
