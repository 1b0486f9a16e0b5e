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

// Absolute is a Clock that schedules at a point in time, not after a
// duration.
type Absolute interface {
	AfterFuncAt(at time.Time, f func()) Timer
}

// At calls f once the clock reads at (at once if it already does). Use it,
// not AfterFunc(at.Sub(c.Now())), for a deadline computed earlier: on a
// Fake advanced by another goroutine between the Now and the AfterFunc,
// the duration would be added to the new time, and the timer would fire
// late by the advance (an actor's wake-up after a six-minute advance came
// six minutes late, and a test waited for a force detach that never came).
// A clock that is not Absolute gets the duration from its own Now.
func At(c Clock, at time.Time, f func()) Timer {
	if a, ok := c.(Absolute); ok {
		return a.AfterFuncAt(at, f)
	}
	return c.AfterFunc(at.Sub(c.Now()), f)
}

// Real returns the clock backed by package time.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
