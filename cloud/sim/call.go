package sim

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/tether/tether/cloud"
)

// Counters is a snapshot of the calls a Cloud has served.
type Counters struct {
	// Calls counts every provider call, including failed and throttled ones.
	Calls map[Method]int
	// Errors counts calls that returned an error, including throttled,
	// injected and cancelled ones.
	Errors map[Method]int
	// Throttled counts calls refused by the token bucket. (An injected
	// cloud.KindThrottled error counts in Errors only.)
	Throttled map[Method]int
	// AttachNew counts attaches that created an attachment (not idempotent
	// repeats).
	AttachNew int
	// DetachNew counts detaches that removed an attachment (not idempotent
	// repeats, not removals by Terminate).
	DetachNew int
}

func newCounters() Counters {
	return Counters{
		Calls:     make(map[Method]int),
		Errors:    make(map[Method]int),
		Throttled: make(map[Method]int),
	}
}

// Calls returns a snapshot of the counters; the caller may keep and modify it.
func (c *Cloud) Calls() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counters
	out.Calls = maps.Clone(c.counters.Calls)
	out.Errors = maps.Clone(c.counters.Errors)
	out.Throttled = maps.Clone(c.counters.Throttled)
	return out
}

// do runs one provider call of method m: count, throttle, latency,
// injected errors, then effect (under the lock), then, with
// Config.StatePath, the write of the state (under the lock too, whether
// the call failed or not: the counters changed). subject describes the
// call's arguments for error messages. Changes recorded by effect are
// delivered to observers after the lock is released, if written.
func (c *Cloud) do(ctx context.Context, m Method, subject string, effect func() error) error {
	latency, err := c.admit(m, subject)
	if err != nil {
		return err
	}
	err = sleep(ctx, latency)
	c.mu.Lock()
	mark := len(c.obs.queue)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = c.faults.injected(m, subject)
	}
	if err == nil {
		err = effect()
	}
	if err != nil {
		c.counters.Errors[m]++
	}
	if perr := c.commitLocked(mark); perr != nil {
		if err == nil {
			c.counters.Errors[m]++
		}
		err = withWriteError(err, m, subject, perr)
	}
	c.mu.Unlock()
	c.deliver()
	return err
}

// withWriteError returns the error of a call of m whose state could not be
// written (perr): perr if the call had succeeded (err nil), else both, err
// first, so that cloud.Classify still returns err's kind.
func withWriteError(err error, m Method, subject string, perr error) error {
	if err == nil {
		return fmt.Errorf("sim: %s %s: %w", m, subject, perr)
	}
	return fmt.Errorf("%w (and %w)", err, perr)
}

// admit counts the call and takes a throttle token. It returns the latency
// to apply, or the throttle error (after writing the counters, with
// Config.StatePath).
func (c *Cloud) admit(m Method, subject string) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters.Calls[m]++
	if !c.bucket.take(c.now()) {
		c.counters.Throttled[m]++
		c.counters.Errors[m]++
		err := fmt.Errorf("sim: %s %s: token bucket empty: %w", m, subject, cloud.ErrThrottled)
		if perr := c.commitLocked(len(c.obs.queue)); perr != nil {
			err = withWriteError(err, m, subject, perr)
		}
		return 0, err
	}
	return c.latency, nil
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// bucket is a token bucket: up to burst tokens, refilled at rate per
// second; rate <= 0 means unlimited. It starts full.
type bucket struct {
	rate   float64
	burst  int
	tokens float64
	last   time.Time
	primed bool
}

func (b *bucket) reset(rate float64, burst int) {
	if burst <= 0 {
		burst = max(1, int(rate))
	}
	*b = bucket{rate: rate, burst: burst}
}

// take refills the bucket up to now and takes one token if there is one.
func (b *bucket) take(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	switch {
	case !b.primed:
		b.tokens, b.last, b.primed = float64(b.burst), now, true
	case now.After(b.last):
		b.tokens = min(float64(b.burst), b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
