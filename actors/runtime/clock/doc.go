// Package clock owns the one injected notion of time: Clock reads the time
// and schedules callbacks, Real wraps package time, and Fake is a manual
// clock for tests. It never starts goroutines of its own in Fake (fired
// callbacks run on the goroutine that calls Advance), so a test decides
// exactly when each timer fires and in what order; code under test takes a
// Clock instead of calling time.Now or time.AfterFunc, which is what makes
// retry and restart delays testable without sleeping.
package clock
