package backoff

import (
	"math"
	"time"
)

// Policy describes an exponential backoff curve. The zero Policy yields no
// delay at all.
type Policy struct {
	// Initial is the delay after the first failure.
	Initial time.Duration
	// Factor multiplies the delay after each further failure; below 1 it
	// counts as 1 (a constant delay).
	Factor float64
	// Max caps every delay, jitter included; 0 or less means no cap other
	// than the largest time.Duration.
	Max time.Duration
	// Jitter is the largest fraction added to a delay: 0.1 adds up to +10%.
	// Negative counts as 0.
	Jitter float64
}

// Default is Kubernetes' volume-operation backoff: 500 ms doubling to a
// 2 min 2 s cap, without jitter.
var Default = Policy{
	Initial: 500 * time.Millisecond,
	Factor:  2,
	Max:     2*time.Minute + 2*time.Second,
	Jitter:  0,
}

// Delay returns how long to wait after the given number of consecutive
// failures: Initial * Factor^(failures-1), stretched by Jitter*u and capped
// at Max. u is the jitter draw in [0, 1); values outside are clamped.
// failures <= 0 yields 0. Huge failure counts saturate at Max; they never
// overflow.
func (p Policy) Delay(failures int, u float64) time.Duration {
	if failures <= 0 || p.Initial <= 0 {
		return 0
	}
	limit := p.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	factor := p.Factor
	if factor < 1 || math.IsNaN(factor) {
		factor = 1
	}
	d := float64(p.Initial) * math.Pow(factor, float64(failures-1))
	if p.Jitter > 0 {
		d *= 1 + p.Jitter*clamp01(u)
	}
	// float64(limit) may round up (MaxInt64 becomes 2^63), so compare in
	// float64 and return limit itself rather than converting d back.
	if math.IsNaN(d) || d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}

// clamp01 maps u into [0, 1]; NaN becomes 0.
func clamp01(u float64) float64 {
	switch {
	case u > 1:
		return 1
	case u > 0:
		return u
	default:
		return 0
	}
}

// Backoff is the state of one operation: its consecutive failures and when
// it may next be tried. The zero Backoff has no failures and is ready.
type Backoff struct {
	failures int
	retryAt  time.Time
}

// Fail records a failure at now and returns when the next try is allowed,
// now plus p.Delay of the new failure count with jitter draw u.
func (b *Backoff) Fail(now time.Time, p Policy, u float64) (retryAt time.Time) {
	if b.failures < math.MaxInt {
		b.failures++
	}
	b.retryAt = now.Add(p.Delay(b.failures, u))
	return b.retryAt
}

// FailTerminal records a failure that repeating the operation will not
// fix (a driver's INVALID_ARGUMENT): the next try waits the cap, p.Max
// with jitter draw u, whatever the count, so that a lasting refusal is
// not a hot loop and a fixed cause is still noticed within the cap.
func (b *Backoff) FailTerminal(now time.Time, p Policy, u float64) (retryAt time.Time) {
	if b.failures < math.MaxInt {
		b.failures++
	}
	b.retryAt = now.Add(p.Delay(math.MaxInt, u))
	return b.retryAt
}

// Ready reports whether the operation may be tried at now.
func (b *Backoff) Ready(now time.Time) bool { return !now.Before(b.retryAt) }

// RetryAt returns when the next try is allowed; the zero time if the
// operation has not failed since the last Reset.
func (b *Backoff) RetryAt() time.Time { return b.retryAt }

// Failures returns the number of consecutive failures.
func (b *Backoff) Failures() int { return b.failures }

// Reset forgets all failures; call it on success.
func (b *Backoff) Reset() { *b = Backoff{} }
