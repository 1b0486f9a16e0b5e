// Package backoff owns the retry curve: how long to wait after the n-th
// consecutive failure of one operation, and the per-operation state that
// counts failures. It is pure (it never reads the clock, sleeps or starts
// goroutines: callers pass the time and the jitter draw in), so every delay
// is reproducible. The curve is Kubernetes' exponential backoff for volume
// operations: 500 ms after the first failure, doubling each time, capped at
// 2 min 2 s, so a broken volume is retried often at first and then about
// every two minutes instead of hammering the cloud API. Optional jitter
// stretches each delay by a random fraction so that many operations that
// failed together (one cloud outage) do not retry in lock step. A success
// resets the count: the next failure starts again at 500 ms.
package backoff
