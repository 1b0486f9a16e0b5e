package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/tether/tether/cloud/csi/csitest"
)

// csiFaults are the fake driver's faults, the knobs of a run on CSI: set
// by the plan's cloud faults, applied to the mutating calls
// (csitest.Mutating) of every plugin, controller and nodes alike, from
// the driver's own hooks (Config.Before before the call reaches the
// driver's state, Hooks.Reply after):
//
//   - errors: INTERNAL, RESOURCE_EXHAUSTED or ABORTED, nothing done;
//   - latency before the call;
//   - throttling: RESOURCE_EXHAUSTED beyond a rate, as drivers pass
//     their cloud's throttling on;
//   - lost replies: the call takes effect, then its caller gets
//     UNAVAILABLE at once or DEADLINE_EXCEEDED at its deadline;
//   - hung calls: the call hangs to its deadline and fails, nothing
//     done; or it takes effect late (at four fifths of the time left:
//     before its caller gives up, never after it acted on the failure)
//     and its reply is lost at the deadline.
//
// Each setting lasts until the next; zero turns it off. It counts what
// it injected, by kind.
type csiFaults struct {
	mu                          sync.Mutex
	rng                         *rand.Rand
	errRate, lossRate, hangRate float64
	latency                     time.Duration
	throttle                    *rate.Limiter   // nil: off; read at time.Now
	late                        map[uint64]bool // calls that took effect late (csitest.CallSeq): reply lost
	injected                    map[string]int
}

var _ knobs = (*csiFaults)(nil)

func newCSIFaults(seed uint64) *csiFaults {
	return &csiFaults{rng: rand.New(rand.NewPCG(seed, seed^0xc51)), late: map[uint64]bool{}, injected: map[string]int{}}
}

func (f *csiFaults) SetErrorRate(p float64)     { f.set(func() { f.errRate = p }) }
func (f *csiFaults) SetLatency(d time.Duration) { f.set(func() { f.latency = d }) }
func (f *csiFaults) SetReplyLoss(p float64)     { f.set(func() { f.lossRate = p }) }
func (f *csiFaults) SetHangRate(p float64)      { f.set(func() { f.hangRate = p }) }

func (f *csiFaults) SetThrottle(r float64, burst int) {
	f.set(func() {
		f.throttle = nil
		if r > 0 {
			f.throttle = rate.NewLimiter(rate.Limit(r), max(burst, 1)) // starts full
		}
	})
}

func (f *csiFaults) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
}

// Injected counts the faults injected into calls so far, by kind.
func (f *csiFaults) Injected() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.injected)
}

// plan is what happens to one call, drawn when it arrives.
type callPlan struct {
	latency time.Duration
	fail    codes.Code // OK: none
	hang    bool
	late    bool // with hang: takes effect late
}

// draw draws the call's plan and counts it.
func (f *csiFaults) draw() callPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := callPlan{latency: f.latency}
	if p.latency > 0 {
		f.injected["latency"]++
	}
	switch {
	case f.throttled():
		p.fail = codes.ResourceExhausted
		f.injected["throttled"]++
	case f.errRate > 0 && f.rng.Float64() < f.errRate:
		p.fail = []codes.Code{codes.Internal, codes.ResourceExhausted, codes.Aborted}[f.rng.IntN(3)]
		f.injected["error/"+p.fail.String()]++
	case f.hangRate > 0 && f.rng.Float64() < f.hangRate:
		p.hang, p.late = true, f.rng.IntN(2) == 0
		f.injected[map[bool]string{false: "hang", true: "hang-late-effect"}[p.late]]++
	}
	return p
}

// throttled takes a token, if throttling is on; called under f.mu.
func (f *csiFaults) throttled() bool {
	return f.throttle != nil && !f.throttle.Allow()
}

// before is the driver's Config.Before.
func (f *csiFaults) before(ctx context.Context, method string) error {
	if !slices.Contains(csitest.Mutating, method) {
		return nil
	}
	p := f.draw()
	if p.latency > 0 {
		if err := sleepCtx(ctx, p.latency); err != nil {
			return err
		}
	}
	switch {
	case p.fail != codes.OK:
		return grpcstatus.Errorf(p.fail, "chaos: injected %s", p.fail)
	case p.hang && p.late:
		return f.hangThenApply(ctx)
	case p.hang:
		<-ctx.Done()
		return grpcstatus.FromContextError(ctx.Err()).Err()
	}
	return nil
}

// hangThenApply lets the call through at four fifths of the time its
// caller left it (a call without a deadline hangs a second), marking
// it so that its reply is lost; a call cancelled first fails.
func (f *csiFaults) hangThenApply(ctx context.Context) error {
	wait := time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl) * 4 / 5
	}
	if err := sleepCtx(ctx, wait); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.late[csitest.CallSeq(ctx)] = true
	return nil
}

// reply is the driver's Hooks.Reply: a call that took effect late, or
// whose reply is lost, answers an error.
func (f *csiFaults) reply(ctx context.Context, _ csitest.Call, err error) error {
	f.mu.Lock()
	late := f.late[csitest.CallSeq(ctx)]
	delete(f.late, csitest.CallSeq(ctx))
	lost := err == nil && !late && f.lossRate > 0 && f.rng.Float64() < f.lossRate
	atDeadline := late || (lost && f.rng.IntN(2) == 0)
	switch {
	case lost && atDeadline:
		f.injected["reply-lost/deadline"]++
	case lost:
		f.injected["reply-lost/unavailable"]++
	}
	f.mu.Unlock()
	switch {
	case err != nil || !(late || lost):
		return err
	case atDeadline:
		<-ctx.Done()
		return grpcstatus.Error(codes.DeadlineExceeded, "chaos: the reply was lost (the call took effect)")
	}
	return grpcstatus.Error(codes.Unavailable, "chaos: the reply was lost (the call took effect)")
}

// sleepCtx sleeps d, or fails with ctx's status if it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return grpcstatus.FromContextError(ctx.Err()).Err()
	case <-t.C: // the injected latency, not synchronization
		return nil
	}
}

// restartDriver stops the plugins a picks (csiRig.servers) until the
// next DriverBack, as a driver restarting with its state kept: the calls
// in progress are cancelled (their callers get UNAVAILABLE), and until
// it serves again every call fails at once.
func (r *runner) restartDriver(a Action) {
	which, ss := r.csi.servers(a)
	r.count(a.Kind + "/" + which)
	r.noteAll("csi driver: %s plugin stopped (restart)", which)
	for _, s := range ss {
		s.Stop()
	}
}

// driverBack serves every plugin stopped.
func (r *runner) driverBack() error {
	r.noteAll("csi driver: every plugin serves again")
	if err := r.csi.serveAll(); err != nil {
		return fmt.Errorf("chaos: csi driver back: %w", err)
	}
	return nil
}
