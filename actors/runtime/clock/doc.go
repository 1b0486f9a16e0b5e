// Package clock owns the one injected notion of time: Clock reads the time
// and schedules callbacks, Real wraps package time, and Fake is a manual
// clock for tests. Code under test takes a Clock instead of calling
// time.Now or time.AfterFunc, so retry and restart delays are testable
// without sleeping. Fake starts no goroutine: fired callbacks run on the
// goroutine that calls Advance, so a test decides exactly when and in
// what order each timer fires.
//
// See docs/design.md#how-the-pieces-fit.
package clock
