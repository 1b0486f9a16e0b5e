// Package backoff owns the retry curve: how long to wait after the n-th
// consecutive failure of one operation (Policy; Default is Kubernetes'
// volume-operation curve, 500 ms doubling to a 2 min 2 s cap), and the
// per-operation state that counts failures (Backoff). Optional jitter
// spreads operations that failed together; a success resets the count.
//
// It is pure: it never reads the clock, sleeps or starts goroutines
// (callers pass the time and the jitter draw in), so every delay is
// reproducible.
//
// See docs/design.md#defaults.
package backoff
