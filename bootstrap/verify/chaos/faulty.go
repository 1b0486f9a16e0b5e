package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tether/tether/cloud"
)

// Faulty is a cloud.Provider in front of another one that fails as the
// sim's fault knobs make the sim fail, for a cloud that has no such knobs
// (the loop cloud): injected errors, latency, throttling, lost replies
// and hung calls, drawn from a seeded generator. It keeps the Provider
// contract its callers rely on:
//
//   - a call whose ctx is done is not sent (nor is one whose ctx ends
//     during its latency);
//   - an injected error or a throttled call has no effect, and says so
//     by its class (cloud.ErrRetryable, cloud.ErrThrottled);
//   - a lost reply is a call carried out whose caller waits until its
//     ctx ends and gets the context's error (without a deadline: an error
//     wrapping context.DeadlineExceeded at once);
//   - a hung call is sent at the very end of its deadline (it lands then,
//     or the cloud drops it, its deadline passed) and its caller gets the
//     context's error when its ctx ends; without a deadline it is never
//     sent.
//
// Errors, lost replies and hangs apply to attaches, detaches and the two
// batched queries (hangs: to attaches and detaches only), as the chaos run
// sets the sim's; latency and throttling to every call. The zero knobs
// inject nothing. Safe for concurrent use.
type Faulty struct {
	next cloud.Provider

	mu      sync.Mutex
	rng     *rand.Rand
	errRate float64
	lose    float64
	hang    float64
	latency time.Duration
	bucket  tokens
}

var _ cloud.Provider = (*Faulty)(nil)

// NewFaulty returns next behind fault knobs, all off, drawing from seed.
func NewFaulty(next cloud.Provider, seed uint64) *Faulty {
	return &Faulty{next: next, rng: rand.New(rand.NewPCG(seed, seed^0xfa017))}
}

// SetErrorRate makes each later attach, detach and query fail with
// probability p with a retryable error, before it is sent (0: none).
func (f *Faulty) SetErrorRate(p float64) { f.set(&f.errRate, p) }

// SetReplyLoss makes each later attach, detach and query lose its reply
// with probability p (0: none).
func (f *Faulty) SetReplyLoss(p float64) { f.set(&f.lose, p) }

// SetHangRate makes each later attach and detach hang to its deadline
// with probability p (0: none).
func (f *Faulty) SetHangRate(p float64) { f.set(&f.hang, p) }

func (f *Faulty) set(knob *float64, p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*knob = min(max(p, 0), 1)
}

// SetLatency delays every later call by d before it is sent (0: none).
func (f *Faulty) SetLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = max(d, 0)
}

// SetThrottle refuses calls beyond rate a second after a burst of burst
// (a bucket that starts full; rate 0: no throttling).
func (f *Faulty) SetThrottle(rate float64, burst int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bucket = tokens{rate: rate, burst: float64(max(burst, 1)), left: float64(max(burst, 1)), last: time.Now()}
}

// kinds of calls, for the knobs that apply to some only.
const (
	callQuery  = iota // VolumesAreAttached, InstanceVolumes
	callChange        // Attach, Detach
	callOther         // InstanceID
)

// fate is how one call goes, drawn when it is admitted.
type fate struct {
	latency    time.Duration
	hang, lose bool
}

// admit refuses a call whose ctx is done, a throttled one and one whose
// injected error was drawn, and draws the fate of the others. A draw
// happens only for a knob that is on, so the same seed and the same calls
// give the same faults.
func (f *Faulty) admit(ctx context.Context, kind int, what string) (fate, error) {
	if err := ctx.Err(); err != nil {
		return fate{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.bucket.take(time.Now()) {
		return fate{}, fmt.Errorf("chaos: %s: throttled: %w", what, cloud.ErrThrottled)
	}
	ft := fate{latency: f.latency}
	if kind == callOther {
		return ft, nil
	}
	if f.errRate > 0 && f.rng.Float64() < f.errRate {
		return fate{}, fmt.Errorf("chaos: %s: injected failure: %w", what, cloud.ErrRetryable)
	}
	if kind == callChange && f.hang > 0 {
		ft.hang = f.rng.Float64() < f.hang
	}
	if f.lose > 0 {
		ft.lose = f.rng.Float64() < f.lose
	}
	return ft, nil
}

// call runs one call of next through the knobs.
func call[T any](f *Faulty, ctx context.Context, kind int, what string, do func(context.Context) (T, error)) (T, error) {
	var zero T
	ft, err := f.admit(ctx, kind, what)
	if err != nil {
		return zero, err
	}
	if err := wait(ctx, ft.latency); err != nil {
		return zero, err // not sent
	}
	if ft.hang {
		deadline, bounded := ctx.Deadline()
		if !bounded {
			<-ctx.Done() // hangs for good: never sent
			return zero, ctx.Err()
		}
		left := time.Until(deadline)
		if err := wait(ctx, left-min(left/10, 10*time.Millisecond)); err != nil {
			return zero, err // cancelled before it was sent
		}
		_, _ = do(ctx) // lands at the end of its deadline, or is dropped past it
		<-ctx.Done()
		return zero, ctx.Err()
	}
	v, err := do(ctx)
	if !ft.lose {
		return v, err
	}
	if _, bounded := ctx.Deadline(); !bounded {
		return zero, fmt.Errorf("chaos: %s: reply lost: %w", what, context.DeadlineExceeded)
	}
	<-ctx.Done()
	return zero, ctx.Err()
}

// wait waits d, or until ctx ends (its error).
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InstanceID implements cloud.Provider.
func (f *Faulty) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	return call(f, ctx, callOther, "instance_id "+string(node), func(ctx context.Context) (cloud.InstanceID, error) {
		return f.next.InstanceID(ctx, node)
	})
}

// InstanceIDs implements cloud.InstanceResolver, with the faults of
// InstanceID, if the wrapped provider resolves in batches.
func (f *Faulty) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	if _, ok := f.next.(cloud.InstanceResolver); !ok {
		return nil, cloud.Unsupported("instance_ids")
	}
	return call(f, ctx, callOther, fmt.Sprintf("instance_ids of %d nodes", len(nodes)), func(ctx context.Context) (map[cloud.NodeName]cloud.InstanceID, error) {
		return cloud.ResolveInstances(ctx, f.next, nodes)
	})
}

// Attach implements cloud.Provider.
func (f *Faulty) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	return call(f, ctx, callChange, fmt.Sprintf("attach %s to %s", vol, inst), func(ctx context.Context) (string, error) {
		return f.next.Attach(ctx, vol, inst)
	})
}

// Detach implements cloud.Provider.
func (f *Faulty) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	_, err := call(f, ctx, callChange, fmt.Sprintf("detach %s from %s", vol, inst), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, f.next.Detach(ctx, vol, inst)
	})
	return err
}

// VolumesAreAttached implements cloud.Provider.
func (f *Faulty) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	return call(f, ctx, callQuery, fmt.Sprintf("volumes_are_attached of %d instances", len(q)), func(ctx context.Context) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
		return f.next.VolumesAreAttached(ctx, q)
	})
}

// InstanceVolumes implements cloud.Provider.
func (f *Faulty) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	return call(f, ctx, callQuery, fmt.Sprintf("instance_volumes of %d instances", len(insts)), func(ctx context.Context) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
		return f.next.InstanceVolumes(ctx, insts)
	})
}

// BatchSize implements cloud.Provider.
func (f *Faulty) BatchSize() int { return f.next.BatchSize() }

// Listing implements cloud.Lister: the wrapped provider's.
func (f *Faulty) Listing() cloud.Listing { return cloud.ListingOf(f.next) }

// tokens is a token bucket: up to burst tokens, refilled at rate a
// second; rate 0 takes nothing.
type tokens struct {
	rate, burst, left float64
	last              time.Time
}

func (b *tokens) take(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	b.left = min(b.burst, b.left+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.left < 1 {
		return false
	}
	b.left--
	return true
}
