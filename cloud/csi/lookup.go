package csi

import (
	"context"
	"fmt"

	"github.com/tether/tether/cloud"
)

// NodeIDLookup finds the node ID that node's node plugin reported (ok
// false: none yet). In distributed mode each machine's agent reports its
// plugin's node ID to the controller, which keeps it in the node's
// status: every controller member reads it there.
type NodeIDLookup func(ctx context.Context, node cloud.NodeName) (id cloud.InstanceID, ok bool, err error)

// WithNodeIDLookup makes InstanceID ask lookup each time (the registry
// only follows it: a node whose plugin reports a new ID gets it at once),
// instead of answering from SetNodeID and WithNodeIDs alone.
func WithNodeIDLookup(lookup NodeIDLookup) Option {
	return func(c *config) { c.lookup = lookup }
}

// lookupNodeID answers InstanceID with the lookup, and registers the
// answer (InstanceVolumes knows the live IDs by the registry). Two nodes
// never share an ID: the second is refused until the first moves.
func (p *Provider) lookupNodeID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	id, ok, err := p.cfg.lookup(ctx, node)
	switch {
	case err != nil:
		if cerr := ctx.Err(); cerr != nil {
			return "", fmt.Errorf("csi: node %s: reading its node ID: %w", node, cerr)
		}
		return "", fmt.Errorf("csi: node %s: reading its node ID: %v: %w", node, err, cloud.ErrRetryable)
	case !ok || id == "":
		p.ForgetNode(node)
		return "", fmt.Errorf("csi: node %s: its agent has reported no CSI node ID yet: %w", node, cloud.ErrNotFound)
	}
	if err := p.SetNodeID(node, id); err != nil {
		return "", err
	}
	return id, nil
}

// NodeOf is the node registered with node ID inst, if any.
func (p *Provider) NodeOf(inst cloud.InstanceID) (cloud.NodeName, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, id := range p.nodes {
		if id == inst {
			return n, true
		}
	}
	return "", false
}
