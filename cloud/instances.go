package cloud

import (
	"context"
	"errors"
	"fmt"
)

// InstanceResolver is a Provider that resolves many nodes to their
// instances in ONE call (EC2's DescribeInstances filtered by name, GCE's
// instances.list with a filter), at most BatchSize nodes per call. A node
// that no instance backs is absent from the result: not an error. A
// controller that restarts resolves every node; one call per node would
// make 10,000 calls for 10,000 nodes.
//
// One that cannot (a wrapper over a provider that cannot, a cloud service
// from before the call) fails with an error wrapping errors.ErrUnsupported
// (Unsupported); the caller then resolves node by node with InstanceID.
type InstanceResolver interface {
	InstanceIDs(ctx context.Context, nodes []NodeName) (map[NodeName]InstanceID, error)
}

// ResolveInstances is how wrappers implement InstanceResolver over inner:
// inner's InstanceIDs, or Unsupported if inner has none.
func ResolveInstances(ctx context.Context, inner Provider, nodes []NodeName) (map[NodeName]InstanceID, error) {
	r, ok := inner.(InstanceResolver)
	if !ok {
		return nil, Unsupported("instance_ids")
	}
	return r.InstanceIDs(ctx, nodes)
}

// Unsupported is the error of a call the provider does not have.
func Unsupported(method string) error {
	return fmt.Errorf("cloud: %s: %w", method, errors.ErrUnsupported)
}
