package faulty

import (
	"context"
	"fmt"
	"time"
)

// Plan is how one admitted call goes (Faults.Admit).
type Plan struct {
	Latency time.Duration // before it is sent
	Hang    bool          // held until the edge of its deadline
	Lose    bool          // its reply is lost after the effect
	margin  time.Duration // Config.HangMargin
	name    string        // Config.Name
	method  Method
}

// Run carries out one admitted call: send runs after the plan's latency
// (a hung call: at the edge of ctx's deadline), whether or not the caller
// still waits, unless ctx's deadline would have passed by then (the cloud
// drops it). send receives the deadline, if any, and must not take effect
// past it. Run returns send's error, or ctx's when ctx ends first or the
// reply is lost (without a deadline, a lost reply fails at once with an
// error wrapping context.DeadlineExceeded: a timeout, outcome unknown).
// A call without latency or faults runs synchronously.
func (p Plan) Run(ctx context.Context, subject string, send func(deadline time.Time, bounded bool) error) error {
	deadline, bounded := ctx.Deadline()
	delay := p.Latency
	if p.Hang {
		p.Lose = true // the caller sees a timeout whatever happened
		if !bounded {
			<-ctx.Done() // hangs for good: never sent
			return ctx.Err()
		}
		left := time.Until(deadline)
		margin := p.margin
		if margin == 0 {
			margin = min(left/10, 10*time.Millisecond)
		}
		delay = left - margin
	}
	run := func() error { return send(deadline, bounded) }
	if delay <= 0 && !p.Lose {
		return run()
	}
	done := make(chan error, 1)
	switch {
	case bounded && time.Now().Add(delay).After(deadline):
		// It would land after its deadline: dropped.
	case delay <= 0:
		done <- run()
	default:
		time.AfterFunc(delay, func() { done <- run() })
	}
	select {
	case err := <-done:
		if !p.Lose {
			return err
		}
		if !bounded {
			return fmt.Errorf("%s: %s %s: reply lost: %w", p.name, p.method, subject, context.DeadlineExceeded)
		}
		<-ctx.Done()
		return ctx.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}
