package limit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tether/tether/cloud"
)

// Config of a limiter. A zero QPS means no rate limit; a zero MaxInFlight
// no bound on calls in flight.
type Config struct {
	QPS         float64 // sustained calls per second
	Burst       int     // calls that may go at once after a quiet spell (at least 1)
	MaxInFlight int     // calls waiting for the cloud at once
}

// Defaults: below the sustained mutating rate of the big clouds' APIs per
// account and region, as the Kubernetes cloud providers keep theirs.
func Defaults() Config { return Config{QPS: 20, Burst: 40, MaxInFlight: 64} }

// Validate says what is wrong with cfg, naming the field.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.QPS) || math.IsInf(c.QPS, 0) || c.QPS < 0:
		return fmt.Errorf("limit: QPS %v: want 0 (no limit) or a positive number", c.QPS)
	case c.QPS > 0 && c.Burst < 1:
		return fmt.Errorf("limit: burst %d: want at least 1", c.Burst)
	case c.MaxInFlight < 0:
		return fmt.Errorf("limit: max in flight %d: want 0 (no bound) or more", c.MaxInFlight)
	}
	return nil
}

// Wrap returns p limited by cfg (p itself when cfg limits nothing).
func Wrap(p cloud.Provider, cfg Config) cloud.Provider {
	if cfg.QPS == 0 && cfg.MaxInFlight == 0 {
		return p
	}
	return wrap(p, cfg, time.Now)
}

// wrap is Wrap with the clock the bucket is read at.
func wrap(p cloud.Provider, cfg Config, now func() time.Time) *limited {
	l := &limited{p: p, cfg: cfg, now: now}
	if cfg.MaxInFlight > 0 {
		l.slots = make(chan struct{}, cfg.MaxInFlight)
	}
	if cfg.QPS > 0 {
		l.bucket = rate.NewLimiter(rate.Limit(cfg.QPS), max(cfg.Burst, 1))
	}
	return l
}

type limited struct {
	p      cloud.Provider
	cfg    Config
	now    func() time.Time
	slots  chan struct{} // nil: no bound
	bucket *rate.Limiter // nil: no rate limit; starts full

	// mu makes a refused reservation the last one when it is cancelled,
	// so that cancelling gives its token back whole.
	mu sync.Mutex
}

// reserve returns when the caller may send, in the order callers ask, or
// ok=false, reserving nothing, when that would be after deadline (zero:
// none).
func (l *limited) reserve(deadline time.Time) (at time.Time, ok bool) {
	if l.bucket == nil {
		return time.Time{}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	r := l.bucket.ReserveN(now, 1)
	at = now.Add(r.DelayFrom(now))
	if !deadline.IsZero() && deadline.Before(at) {
		r.CancelAt(now)
		return at, false
	}
	return at, true
}

// turn waits for the caller's turn (a token, then a slot), or fails
// without sending when ctx would end first. done releases the slot.
func (l *limited) turn(ctx context.Context, what string) (done func(), err error) {
	deadline, _ := ctx.Deadline()
	at, ok := l.reserve(deadline)
	if !ok {
		return nil, fmt.Errorf("limit: %s not sent: its turn (in %s) comes after its deadline: %w", what, at.Sub(l.now()).Round(time.Millisecond), cloud.ErrThrottled)
	}
	if wait := at.Sub(l.now()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("limit: %s not sent: %v while waiting for its turn: %w", what, ctx.Err(), cloud.ErrThrottled)
		}
	}
	if l.slots == nil {
		return func() {}, nil
	}
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("limit: %s not sent: %v while %d calls were in flight: %w", what, ctx.Err(), cap(l.slots), cloud.ErrThrottled)
	}
}

func (l *limited) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	done, err := l.turn(ctx, "InstanceID "+string(node))
	if err != nil {
		return "", err
	}
	defer done()
	return l.p.InstanceID(ctx, node)
}

func (l *limited) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	done, err := l.turn(ctx, "attach of "+string(vol))
	if err != nil {
		return "", err
	}
	defer done()
	return l.p.Attach(ctx, vol, inst)
}

func (l *limited) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	done, err := l.turn(ctx, "detach of "+string(vol))
	if err != nil {
		return err
	}
	defer done()
	return l.p.Detach(ctx, vol, inst)
}

func (l *limited) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	done, err := l.turn(ctx, "VolumesAreAttached")
	if err != nil {
		return nil, err
	}
	defer done()
	return l.p.VolumesAreAttached(ctx, query)
}

func (l *limited) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	done, err := l.turn(ctx, "InstanceVolumes")
	if err != nil {
		return nil, err
	}
	defer done()
	return l.p.InstanceVolumes(ctx, insts)
}

// InstanceIDs implements cloud.InstanceResolver: one turn for the batch,
// if the wrapped provider resolves in batches (else cloud.Unsupported,
// taking no turn).
func (l *limited) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	if _, ok := l.p.(cloud.InstanceResolver); !ok {
		return nil, cloud.Unsupported("instance_ids")
	}
	done, err := l.turn(ctx, "InstanceIDs")
	if err != nil {
		return nil, err
	}
	defer done()
	return cloud.ResolveInstances(ctx, l.p, nodes)
}

func (l *limited) BatchSize() int { return l.p.BatchSize() }

// Listing implements cloud.Lister: the wrapped provider's.
func (l *limited) Listing() cloud.Listing { return cloud.ListingOf(l.p) }
