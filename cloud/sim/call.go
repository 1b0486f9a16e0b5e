package sim

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/tether/tether/cloud/faulty"
)

// Counters is a snapshot of the calls a Cloud has served.
type Counters struct {
	// Calls counts every provider call, including failed and throttled ones.
	Calls map[Method]int
	// Errors counts calls that failed in the cloud: throttled, refused
	// before they were sent (ctx already done), dropped past their
	// deadline, failed by an injected error or by the effect itself. A
	// caller that stops waiting (its ctx ends, its reply is lost) is not
	// counted here: the call goes on in the cloud.
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
	c.lockSettled()
	defer c.mu.Unlock()
	out := c.counters
	out.Calls = maps.Clone(c.counters.Calls)
	out.Errors = maps.Clone(c.counters.Errors)
	out.Throttled = maps.Clone(c.counters.Throttled)
	return out
}

// do runs one provider call of method m. The call is sent once admitted
// (counted, a throttle token taken, ctx not already done): from then on it
// is carried out whether or not its caller still waits, as a real cloud
// carries out a request whose client has gone. Its effect runs after the
// latency (a hung call: at the very end of ctx's deadline), under the lock:
// injected errors (FailNext, then SetErrorRate), then effect, then, with
// Config.StatePath, the write of the state (whether the call failed or not:
// the counters changed). It never runs after ctx's deadline: a call whose
// deadline passes first is dropped by the cloud. The caller waits for the
// result or for ctx, whichever comes first; a lost reply keeps it waiting
// until ctx ends (or, without a deadline, fails at once with an error
// wrapping context.DeadlineExceeded: a timeout, the outcome unknown).
// subject describes the call's arguments for error messages. Changes
// recorded by effect are delivered to observers after the lock is released,
// if written.
func (c *Cloud) do(ctx context.Context, m Method, subject string, effect func() error) error {
	p, err := c.admit(ctx, m, subject)
	if err != nil {
		return err
	}
	return p.Run(ctx, subject, func(deadline time.Time, bounded bool) error {
		return c.apply(m, subject, deadline, bounded, effect)
	})
}

// apply carries out a sent call of m: injected errors, the effect and the
// state write, under the lock, unless the call's deadline has passed.
func (c *Cloud) apply(m Method, subject string, deadline time.Time, bounded bool, effect func() error) error {
	c.mu.Lock()
	var err error
	if bounded && time.Now().After(deadline) {
		err = fmt.Errorf("sim: %s %s: dropped, its deadline passed: %w", m, subject, context.DeadlineExceeded)
	}
	if err == nil {
		err = c.Faults.Injected(m, subject)
	}
	if err == nil {
		err = effect()
	}
	if err != nil {
		c.counters.Errors[m]++
	}
	if perr := c.commitLocked(); perr != nil {
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

// admit counts the call and takes a throttle token. A ctx already done
// fails the call before it is sent (counted as an error, no effect). It
// returns how the call will go (the faults drawn for it), or the throttle
// error (after writing the counters, with Config.StatePath).
func (c *Cloud) admit(ctx context.Context, m Method, subject string) (faulty.Plan, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters.Calls[m]++
	if err := ctx.Err(); err != nil {
		c.counters.Errors[m]++
		return faulty.Plan{}, err
	}
	p, err := c.Faults.Admit(m, subject)
	if err != nil {
		c.counters.Throttled[m]++
		c.counters.Errors[m]++
		if perr := c.commitLocked(); perr != nil {
			err = withWriteError(err, m, subject, perr)
		}
		return faulty.Plan{}, err
	}
	return p, nil
}
