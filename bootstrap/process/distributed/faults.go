package distributed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tether/tether/cloud"
)

// Faults are the cloud and store faults a chaos run turns on in a member
// (Command.Faults); the zero value is none. They stand for the sim
// cloud's fault knobs (the cloud process has no remote control of them),
// applied by the member to its own calls with the sim's semantics: an
// error before any effect, latency before the call, a token bucket, a
// reply lost after the effect (the caller waits until its deadline), a
// call held to the edge of its deadline and carried out there.
type Faults struct {
	ErrorRate     float64       `json:"error_rate,omitempty"` // attach, detach and the batched queries fail (retryable)
	Latency       time.Duration `json:"latency,omitempty"`
	ThrottleQPS   float64       `json:"throttle_qps,omitempty"`
	ThrottleBurst int           `json:"throttle_burst,omitempty"`
	ReplyLoss     float64       `json:"reply_loss,omitempty"`
	HangRate      float64       `json:"hang_rate,omitempty"` // attach and detach
	// StoreFailRate fails node status writes (store.ErrInjected) before
	// they are sent.
	StoreFailRate float64 `json:"store_fail_rate,omitempty"`
	Seed          uint64  `json:"seed,omitempty"`
}

// faultyCloud is a cloud.Provider with Faults.
type faultyCloud struct {
	cloud.Provider
	mu     sync.Mutex
	f      Faults
	rng    *rand.Rand
	tokens float64
	last   time.Time
}

// Listing implements cloud.Lister: the wrapped provider's.
func (c *faultyCloud) Listing() cloud.Listing { return cloud.ListingOf(c.Provider) }

func (c *faultyCloud) set(f Faults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0xc10d))
	}
	c.f, c.tokens, c.last = f, float64(f.ThrottleBurst), time.Now()
}

// plan is how one call goes.
type plan struct {
	throttled, fail, hang, lose bool
	latency                     time.Duration
}

func (c *faultyCloud) draw(hangs bool) plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.f
	var p plan
	if f.ThrottleQPS > 0 {
		now := time.Now()
		c.tokens = min(float64(max(1, f.ThrottleBurst)), c.tokens+now.Sub(c.last).Seconds()*f.ThrottleQPS)
		c.last = now
		if c.tokens < 1 {
			return plan{throttled: true}
		}
		c.tokens--
	}
	p.latency = f.Latency
	p.fail = f.ErrorRate > 0 && c.rng.Float64() < f.ErrorRate
	p.hang = hangs && f.HangRate > 0 && c.rng.Float64() < f.HangRate
	p.lose = f.ReplyLoss > 0 && c.rng.Float64() < f.ReplyLoss
	return p
}

// hangMargin: a hung call is sent this long before its deadline, enough
// for the remote client's margin (cloud/remote.DeadlineMargin) and the
// trip.
const hangMargin = 40 * time.Millisecond

func (c *faultyCloud) call(ctx context.Context, method string, hangs bool, f func(context.Context) error) error {
	p := c.draw(hangs)
	switch {
	case p.throttled:
		return fmt.Errorf("chaos: %s: throttled: %w", method, cloud.ErrThrottled)
	case p.fail:
		return fmt.Errorf("chaos: %s: injected failure: %w", method, cloud.KindRetryable.Sentinel())
	}
	wait := p.latency
	deadline, bounded := ctx.Deadline()
	if p.hang {
		if !bounded {
			<-ctx.Done() // hangs for good: the call is never sent
			return ctx.Err()
		}
		wait, p.lose = time.Until(deadline)-hangMargin, true
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	err := f(ctx)
	if !p.lose {
		return err
	}
	if !bounded {
		return fmt.Errorf("chaos: %s: reply lost: %w", method, context.DeadlineExceeded)
	}
	<-ctx.Done()
	return ctx.Err()
}

func (c *faultyCloud) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	var dev string
	err := c.call(ctx, "attach", true, func(ctx context.Context) (err error) {
		dev, err = c.Provider.Attach(ctx, vol, inst)
		return err
	})
	return dev, err
}

func (c *faultyCloud) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	return c.call(ctx, "detach", true, func(ctx context.Context) error { return c.Provider.Detach(ctx, vol, inst) })
}

func (c *faultyCloud) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	var out map[cloud.InstanceID]map[cloud.VolumeID]bool
	err := c.call(ctx, "volumes_are_attached", false, func(ctx context.Context) (err error) {
		out, err = c.Provider.VolumesAreAttached(ctx, q)
		return err
	})
	return out, err
}

// InstanceIDs implements cloud.InstanceResolver if the wrapped provider
// does, with the faults of a query.
func (c *faultyCloud) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	if _, ok := c.Provider.(cloud.InstanceResolver); !ok {
		return nil, cloud.Unsupported("instance_ids")
	}
	var out map[cloud.NodeName]cloud.InstanceID
	err := c.call(ctx, "instance_ids", false, func(ctx context.Context) (err error) {
		out, err = cloud.ResolveInstances(ctx, c.Provider, nodes)
		return err
	})
	return out, err
}

func (c *faultyCloud) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	var out map[cloud.InstanceID]map[cloud.VolumeID]string
	err := c.call(ctx, "instance_volumes", false, func(ctx context.Context) (err error) {
		out, err = c.Provider.InstanceVolumes(ctx, insts)
		return err
	})
	return out, err
}
