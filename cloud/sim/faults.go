package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/tether/tether/cloud"
)

// FailNext makes the next n calls of m fail with an error of that kind (the
// wrapped sentinel, so cloud.Classify returns kind), before any effect. It
// replaces any earlier FailNext of m; n <= 0 cancels it. cloud.KindNone (or
// an unknown kind) injects an unclassified error, which cloud.Classify
// treats as retryable. Calls refused by the throttle or a done ctx do not
// consume an injected failure.
func (c *Cloud) FailNext(m Method, n int, kind cloud.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= 0 {
		delete(c.faults.next, m)
		return
	}
	c.faults.next[m] = failNext{n: n, kind: kind}
}

// SetErrorRate makes each later call of m fail with probability p (drawn
// from the generator seeded by Config.Seed) with an error of that kind,
// before any effect and after any FailNext failure. p <= 0 cancels it; p >= 1
// fails every call. A draw happens only for calls of a method with a rate
// set, so the same seed and the same sequence of calls give the same
// failures.
func (c *Cloud) SetErrorRate(m Method, p float64, kind cloud.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p <= 0 {
		delete(c.faults.rate, m)
		return
	}
	c.faults.rate[m] = errorRate{p: min(p, 1), kind: kind}
}

// SetReplyLoss makes each later call of m lose its reply with probability
// p (drawn from the generator seeded by Config.Seed): the call takes effect
// (or fails) in the cloud, and its caller waits until its context ends and
// gets the context's error, as after a timeout; a caller without a deadline
// gets a "reply lost" error wrapping context.DeadlineExceeded at once.
// p <= 0 cancels it.
func (c *Cloud) SetReplyLoss(m Method, p float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	setRate(c.faults.lose, m, p)
}

// SetHangRate makes each later call of m hang with probability p: it is
// held until the very end of its context's deadline, takes effect then (if
// no injected error says otherwise), and its caller gets the context's
// error. A call without a deadline hangs until its context is cancelled and
// never takes effect. p <= 0 cancels it.
func (c *Cloud) SetHangRate(m Method, p float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	setRate(c.faults.hang, m, p)
}

func setRate(rates map[Method]float64, m Method, p float64) {
	if p <= 0 {
		delete(rates, m)
		return
	}
	rates[m] = min(p, 1)
}

type failNext struct {
	n    int
	kind cloud.Kind
}

type errorRate struct {
	p    float64
	kind cloud.Kind
}

// faults holds the injected errors; guarded by Cloud.mu.
type faults struct {
	rng  *rand.Rand
	next map[Method]failNext
	rate map[Method]errorRate
	hang map[Method]float64
	lose map[Method]float64
}

func newFaults(rng *rand.Rand) faults {
	return faults{rng: rng, next: make(map[Method]failNext), rate: make(map[Method]errorRate),
		hang: make(map[Method]float64), lose: make(map[Method]float64)}
}

// transport draws whether a call of m hangs and whether its reply is lost.
// A draw happens only for a method with a rate set.
func (f *faults) transport(m Method) (hang, lose bool) {
	if p, ok := f.hang[m]; ok {
		hang = f.rng.Float64() < p
	}
	if p, ok := f.lose[m]; ok {
		lose = f.rng.Float64() < p
	}
	return hang, lose
}

// injected returns the injected error of this call of m, if any.
func (f *faults) injected(m Method, subject string) error {
	if fn, ok := f.next[m]; ok {
		if fn.n <= 1 {
			delete(f.next, m)
		} else {
			f.next[m] = failNext{n: fn.n - 1, kind: fn.kind}
		}
		return injectedError(m, subject, fn.kind)
	}
	if r, ok := f.rate[m]; ok && f.rng.Float64() < r.p {
		return injectedError(m, subject, r.kind)
	}
	return nil
}

func injectedError(m Method, subject string, kind cloud.Kind) error {
	sentinel := kind.Sentinel()
	if sentinel == nil {
		return fmt.Errorf("sim: %s %s: injected unclassified failure", m, subject)
	}
	return fmt.Errorf("sim: %s %s: injected failure: %w", m, subject, sentinel)
}
