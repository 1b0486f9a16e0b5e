// Package clock owns the one injected notion of time: Clock reads the time
// and schedules callbacks, Real wraps package time, and Fake is a manual
// clock for tests. It never starts goroutines of its own in Fake (fired
// callbacks run on the goroutine that calls Advance), so a test decides
// exactly when each timer fires and in what order; code under test takes a
// Clock instead of calling time.Now or time.AfterFunc, which is what makes
// retry and restart delays testable without sleeping.
package clock

import "time"

// Timer is a scheduled callback. Stop prevents it from firing and reports
// whether it did so (false if it already fired or was already stopped),
// like (*time.Timer).Stop.
type Timer interface {
	Stop() bool
}

// Clock reads the current time and schedules callbacks.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, after d has passed. The Real clock calls f in
	// its own goroutine, as time.AfterFunc does.
	AfterFunc(d time.Duration, f func()) Timer
}

// Real returns the clock backed by package time.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
