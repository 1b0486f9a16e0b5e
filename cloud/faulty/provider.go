package faulty

import (
	"context"
	"fmt"
	"time"

	"github.com/tether/tether/cloud"
)

// Provider is a cloud.Provider in front of another one, failing as its
// Faults say, for a cloud that has no fault knobs of its own (the loop
// cloud, a cloud in another process). The knobs are its embedded Faults.
// A call whose ctx is done is not sent; an injected error or a throttled
// call is not sent either; a sent call reaches the wrapped provider with
// a context that keeps ctx's deadline but not its cancellation, so that
// it is carried out even if its caller stops waiting (Run). Safe for
// concurrent use.
type Provider struct {
	*Faults
	next cloud.Provider
}

var (
	_ cloud.Provider         = (*Provider)(nil)
	_ cloud.InstanceResolver = (*Provider)(nil)
	_ cloud.Lister           = (*Provider)(nil)
)

// Wrap returns next behind f.
func Wrap(next cloud.Provider, f *Faults) *Provider {
	return &Provider{Faults: f, next: next}
}

// call runs one call of m through the faults; do is the wrapped call.
func call[T any](p *Provider, ctx context.Context, m Method, subject string, do func(context.Context) (T, error)) (T, error) {
	var out T
	if err := ctx.Err(); err != nil {
		return out, err // not sent
	}
	plan, err := p.Admit(m, subject)
	if err != nil {
		return out, err
	}
	sent := context.WithoutCancel(ctx)
	err = plan.Run(ctx, subject, func(deadline time.Time, bounded bool) error {
		if err := p.Injected(m, subject); err != nil {
			return err
		}
		sctx := sent
		if bounded {
			var cancel context.CancelFunc
			sctx, cancel = context.WithDeadline(sent, deadline)
			defer cancel()
		}
		v, err := do(sctx)
		if err == nil {
			out = v
		}
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// InstanceID implements cloud.Provider.
func (p *Provider) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	return call(p, ctx, MethodInstanceID, string(node), func(ctx context.Context) (cloud.InstanceID, error) {
		return p.next.InstanceID(ctx, node)
	})
}

// InstanceIDs implements cloud.InstanceResolver if the wrapped provider
// resolves in batches (else cloud.Unsupported, nothing drawn).
func (p *Provider) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	if _, ok := p.next.(cloud.InstanceResolver); !ok {
		return nil, cloud.Unsupported("instance_ids")
	}
	return call(p, ctx, MethodInstanceIDs, fmt.Sprintf("of %d nodes", len(nodes)), func(ctx context.Context) (map[cloud.NodeName]cloud.InstanceID, error) {
		return cloud.ResolveInstances(ctx, p.next, nodes)
	})
}

// Attach implements cloud.Provider.
func (p *Provider) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	return call(p, ctx, MethodAttach, fmt.Sprintf("%s %s", vol, inst), func(ctx context.Context) (string, error) {
		return p.next.Attach(ctx, vol, inst)
	})
}

// Detach implements cloud.Provider.
func (p *Provider) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	_, err := call(p, ctx, MethodDetach, fmt.Sprintf("%s %s", vol, inst), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, p.next.Detach(ctx, vol, inst)
	})
	return err
}

// VolumesAreAttached implements cloud.Provider.
func (p *Provider) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	return call(p, ctx, MethodVolumesAreAttached, fmt.Sprintf("of %d instances", len(q)), func(ctx context.Context) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
		return p.next.VolumesAreAttached(ctx, q)
	})
}

// InstanceVolumes implements cloud.Provider.
func (p *Provider) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	return call(p, ctx, MethodInstanceVolumes, fmt.Sprintf("of %d instances", len(insts)), func(ctx context.Context) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
		return p.next.InstanceVolumes(ctx, insts)
	})
}

// BatchSize implements cloud.Provider: the wrapped provider's.
func (p *Provider) BatchSize() int { return p.next.BatchSize() }

// Listing implements cloud.Lister: the wrapped provider's.
func (p *Provider) Listing() cloud.Listing { return cloud.ListingOf(p.next) }
