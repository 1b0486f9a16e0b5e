package faulty

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// effects is a provider that records the attaches that reached it, and
// when.
type effects struct {
	mu sync.Mutex
	at []time.Time
}

func (e *effects) landed() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Time(nil), e.at...)
}

func (e *effects) InstanceID(context.Context, cloud.NodeName) (cloud.InstanceID, error) {
	return "i-1", nil
}

func (e *effects) Attach(ctx context.Context, _ cloud.VolumeID, _ cloud.InstanceID) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err // the contract: a done ctx is not sent
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.at = append(e.at, time.Now())
	return "/dev/x", nil
}

func (e *effects) Detach(context.Context, cloud.VolumeID, cloud.InstanceID) error { return nil }
func (e *effects) VolumesAreAttached(context.Context, map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	return nil, nil
}
func (e *effects) InstanceVolumes(context.Context, []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	return nil, nil
}
func (e *effects) BatchSize() int { return 3 }

func wrapped(cfg Config) (*Provider, *effects) {
	e := &effects{}
	return Wrap(e, New(cfg)), e
}

// waitLanded polls until n attaches landed, or fails at the deadline.
func waitLanded(t *testing.T, e *effects, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(e.landed()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d attaches landed, want %d", len(e.landed()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDoneCtxIsNotSent(t *testing.T) {
	p, e := wrapped(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Attach(ctx, "v", "i"); !errors.Is(err, context.Canceled) || len(e.landed()) != 0 {
		t.Fatalf("attach with a done ctx: %v, %d landed; want canceled, none", err, len(e.landed()))
	}
}

// FailNext fails the next n calls of its method with its class, before
// any effect, and leaves other methods alone.
func TestFailNext(t *testing.T) {
	p, e := wrapped(Config{})
	ctx := context.Background()
	p.FailNext(MethodAttach, 2, cloud.KindTerminal)
	for i := range 2 {
		if _, err := p.Attach(ctx, "v", "i"); cloud.Classify(err) != cloud.KindTerminal {
			t.Fatalf("attach %d: %v, want terminal", i, err)
		}
	}
	if len(e.landed()) != 0 {
		t.Fatal("an injected failure had an effect")
	}
	if err := p.Detach(ctx, "v", "i"); err != nil {
		t.Fatalf("detach: %v, want no fault", err)
	}
	if dev, err := p.Attach(ctx, "v", "i"); err != nil || dev != "/dev/x" {
		t.Fatalf("third attach: %q, %v", dev, err)
	}
	p.FailNext(MethodInstanceID, 1, cloud.KindNone)
	if _, err := p.InstanceID(ctx, "n"); err == nil || cloud.Classify(err) != cloud.KindRetryable {
		t.Fatalf("unclassified injection: %v, want an error Classify calls retryable", err)
	}
}

// An error rate applies to its method only, with its class.
func TestErrorRatePerMethod(t *testing.T) {
	p, e := wrapped(Config{})
	ctx := context.Background()
	p.SetErrorRate(MethodAttach, 1, cloud.KindAttachedElsewhere)
	if _, err := p.Attach(ctx, "v", "i"); !errors.Is(err, cloud.ErrAttachedElsewhere) {
		t.Fatalf("attach: %v, want attached elsewhere", err)
	}
	if _, err := p.InstanceVolumes(ctx, []cloud.InstanceID{"i"}); err != nil {
		t.Fatalf("instance_volumes: %v, want no fault", err)
	}
	p.SetErrorRate(MethodAttach, 0, cloud.KindRetryable)
	if _, err := p.Attach(ctx, "v", "i"); err != nil || len(e.landed()) != 1 {
		t.Fatalf("after the rate is off: %v, %d landed", err, len(e.landed()))
	}
}

// The throttle is read at the injected clock: a burst, then refusals
// (throttled, not sent) until the clock moves.
func TestThrottleAtFakeClock(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p, e := wrapped(Config{Now: func() time.Time { return now }})
	p.SetThrottle(1, 2)
	ctx := context.Background()
	attach := func() error { _, err := p.Attach(ctx, "v", "i"); return err }
	for i := range 2 {
		if err := attach(); err != nil {
			t.Fatalf("attach %d of the burst: %v", i, err)
		}
	}
	if err := attach(); !errors.Is(err, cloud.ErrThrottled) {
		t.Fatalf("third attach at the same instant: %v, want throttled", err)
	}
	if len(e.landed()) != 2 {
		t.Fatalf("%d landed, want 2: a throttled call was sent", len(e.landed()))
	}
	now = now.Add(time.Second)
	if err := attach(); err != nil {
		t.Fatalf("after a second of the fake clock: %v, want a token", err)
	}
	if err := attach(); !errors.Is(err, cloud.ErrThrottled) {
		t.Fatalf("second call after one second: %v, want throttled", err)
	}
	p.SetThrottle(0, 0)
	if err := attach(); err != nil {
		t.Fatalf("throttle off: %v", err)
	}
}

// Latency delays the call before it is sent; a call whose deadline would
// pass first is dropped, never landing.
func TestLatency(t *testing.T) {
	p, e := wrapped(Config{})
	p.SetLatency(40 * time.Millisecond)
	start := time.Now()
	if _, err := p.Attach(context.Background(), "v", "i"); err != nil {
		t.Fatal(err)
	}
	if at := e.landed(); len(at) != 1 || at[0].Sub(start) < 40*time.Millisecond {
		t.Fatalf("landed %v after the call, want one after at least 40ms", at)
	}
	p.SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Attach(ctx, "v", "i"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("latency past the deadline: %v, want deadline exceeded", err)
	}
	if n := len(e.landed()); n != 1 {
		t.Fatalf("%d landed: a call past its deadline was sent", n)
	}
}

// A call once sent is carried out after its caller stops waiting.
func TestSentCallOutlivesItsCaller(t *testing.T) {
	p, e := wrapped(Config{})
	p.SetLatency(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel) // the caller leaves during the latency
	if _, err := p.Attach(ctx, "v", "i"); !errors.Is(err, context.Canceled) {
		t.Fatalf("attach: %v, want canceled", err)
	}
	waitLanded(t, e, 1)
}

// A lost reply: the effect lands, the caller sees a timeout (at its
// deadline, or at once without one).
func TestReplyLoss(t *testing.T) {
	p, e := wrapped(Config{})
	p.SetReplyLoss(MethodAttach, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := p.Attach(ctx, "v", "i"); !errors.Is(err, context.DeadlineExceeded) || ctx.Err() == nil {
		t.Fatalf("lost reply: %v (ctx %v), want the deadline's error once it passed", err, ctx.Err())
	}
	if _, err := p.Attach(context.Background(), "v", "i"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lost reply without a deadline: %v, want one wrapping deadline exceeded", err)
	}
	if n := len(e.landed()); n != 2 {
		t.Fatalf("%d landed, want both: a lost reply follows the effect", n)
	}
	if err := p.Detach(context.Background(), "v", "i"); err != nil {
		t.Fatalf("detach: %v, want its reply", err)
	}
}

// A hung call is sent at the edge of its deadline (HangMargin before it)
// and its caller gets the timeout; without a deadline it is never sent.
func TestHang(t *testing.T) {
	p, e := wrapped(Config{HangMargin: 20 * time.Millisecond})
	p.SetHangRate(MethodAttach, 1)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Attach(ctx, "v", "i"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: %v, want deadline exceeded", err)
	}
	at := e.landed()
	if len(at) != 1 || at[0].Sub(start) < 70*time.Millisecond {
		t.Fatalf("landed %v, want one about 80ms after the call", at)
	}
	never, stop := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, stop)
	if _, err := p.Attach(never, "v", "i"); !errors.Is(err, context.Canceled) {
		t.Fatalf("hung call without a deadline: %v, want canceled", err)
	}
	if n := len(e.landed()); n != 1 {
		t.Fatalf("%d landed: a hung call without a deadline was sent", n)
	}
}

// reseeded stands for a Provider made with another seed, then reseeded.
const reseeded = 1 << 40

// The same seed and calls give the same faults (seeded by New or
// Reseed); another seed others.
func TestSeedDeterminism(t *testing.T) {
	draw := func(seed uint64) []bool {
		p, _ := wrapped(Config{Seed: seed})
		if seed == reseeded {
			p.Reseed(42) // as New with Seed 42
		}
		p.SetErrorRate(MethodAttach, 0.5, cloud.KindRetryable)
		p.SetReplyLoss(MethodDetach, 0.5)
		out := make([]bool, 0, 200)
		for range 100 {
			_, err := p.Attach(context.Background(), "v", "i")
			out = append(out, err != nil)
			out = append(out, p.Detach(context.Background(), "v", "i") != nil)
		}
		return out
	}
	const seed = 42
	a, b, c := draw(seed), draw(reseeded), draw(seed+1)
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed %d: call %d differs between New and Reseed", seed, i)
		}
		if a[i] {
			failed++
		}
	}
	if failed < 60 || failed > 140 {
		t.Fatalf("seed %d: %d of 200 calls failed, want about half", seed, failed)
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatalf("seeds %d and %d gave the same 200 faults", seed, seed+1)
	}
}

func TestPassThrough(t *testing.T) {
	p, _ := wrapped(Config{})
	if p.BatchSize() != 3 {
		t.Fatalf("BatchSize = %d, want the wrapped one's", p.BatchSize())
	}
	if _, err := p.InstanceIDs(context.Background(), []cloud.NodeName{"n"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("InstanceIDs over a provider without it: %v, want unsupported", err)
	}
}
