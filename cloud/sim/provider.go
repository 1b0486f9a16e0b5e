package sim

import (
	"context"
	"fmt"

	"github.com/tether/tether/cloud"
)

// BatchSize implements cloud.Provider. It is not a cloud call: it is not
// counted, throttled or delayed.
func (c *Cloud) BatchSize() int { return c.batch }

// InstanceID implements cloud.Provider. A stopped instance still resolves
// (same ID) until Start; a node with no instance fails with
// cloud.ErrNotFound.
func (c *Cloud) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	var id cloud.InstanceID
	err := c.do(ctx, MethodInstanceID, "node "+string(node), func() error {
		in, ok := c.nodes[node]
		if !ok {
			return fmt.Errorf("sim: instance_id: no instance backs node %s: %w", node, cloud.ErrNotFound)
		}
		id = in.id
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

var _ cloud.InstanceResolver = (*Cloud)(nil)

// InstanceIDs implements cloud.InstanceResolver: one call, counted as
// MethodInstanceIDs, for at most BatchSize nodes; a node no instance
// backs is absent.
func (c *Cloud) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	var out map[cloud.NodeName]cloud.InstanceID
	err := c.do(ctx, MethodInstanceIDs, fmt.Sprintf("of %d nodes", len(nodes)), func() error {
		if len(nodes) > c.batch {
			return fmt.Errorf("sim: %s: %d nodes exceed the batch size of %d: %w", MethodInstanceIDs, len(nodes), c.batch, cloud.ErrTerminal)
		}
		out = make(map[cloud.NodeName]cloud.InstanceID, len(nodes))
		for _, n := range nodes {
			if in, ok := c.nodes[n]; ok {
				out[n] = in.id
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Attach implements cloud.Provider. Checks, in order: unknown volume or
// instance (cloud.ErrNotFound); stopped instance (cloud.ErrRetryable,
// "instance not running"); already attached to inst (success, same device
// path, not counted in AttachNew); exclusive volume attached to another
// instance (cloud.ErrAttachedElsewhere, unless Config.Permissive); instance
// at its attach limit (cloud.ErrLimitReached).
func (c *Cloud) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	var dev string
	err := c.do(ctx, MethodAttach, fmt.Sprintf("%s to %s", vol, inst), func() error {
		var err error
		dev, err = c.attachLocked(vol, inst)
		return err
	})
	if err != nil {
		return "", err // the effect may have run, and been undone
	}
	return dev, nil
}

func (c *Cloud) attachLocked(vol cloud.VolumeID, id cloud.InstanceID) (string, error) {
	v, in, err := c.lookupLocked(MethodAttach, vol, id)
	if err != nil {
		return "", err
	}
	if !in.running {
		return "", fmt.Errorf("sim: attach %s to %s: instance not running: %w", vol, id, cloud.ErrRetryable)
	}
	if dev, ok := in.devices[vol]; ok {
		return dev, nil
	}
	if v.mode == cloud.Exclusive && len(v.attached) > 0 && !c.lenient {
		other := sortedKeys(v.attached)[0]
		return "", fmt.Errorf("sim: attach %s to %s: exclusive volume attached to %s: %w", vol, id, other, cloud.ErrAttachedElsewhere)
	}
	if len(in.devices) >= in.limit {
		return "", fmt.Errorf("sim: attach %s to %s: instance has %d of %d volumes: %w",
			vol, id, len(in.devices), in.limit, cloud.ErrLimitReached)
	}
	dev := freeDevice(in.devices)
	in.devices[vol] = dev
	v.attached[id] = struct{}{}
	c.touchInstLocked(id)
	c.counters.AttachNew++
	c.recordLocked(v, in, true, ReasonAttach)
	return dev, nil
}

// Detach implements cloud.Provider. Unknown volume or instance fails with
// cloud.ErrNotFound; a volume not attached to inst succeeds (idempotent,
// not counted in DetachNew).
func (c *Cloud) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	return c.do(ctx, MethodDetach, fmt.Sprintf("%s from %s", vol, inst), func() error {
		v, in, err := c.lookupLocked(MethodDetach, vol, inst)
		if err != nil {
			return err
		}
		if _, ok := in.devices[vol]; ok {
			c.removeLocked(v, in, ReasonDetach)
			c.counters.DetachNew++
		}
		return nil
	})
}

// VolumesAreAttached implements cloud.Provider: one call whatever the number
// of instances. More than BatchSize instances fails with cloud.ErrTerminal.
// An unknown or stopped instance maps every listed volume to false.
func (c *Cloud) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	var out map[cloud.InstanceID]map[cloud.VolumeID]bool
	err := c.do(ctx, MethodVolumesAreAttached, fmt.Sprintf("of %d instances", len(query)), func() error {
		if err := c.checkBatch(MethodVolumesAreAttached, len(query)); err != nil {
			return err
		}
		out = make(map[cloud.InstanceID]map[cloud.VolumeID]bool, len(query))
		for id, vols := range query {
			in := c.insts[id]
			res := make(map[cloud.VolumeID]bool, len(vols))
			for _, vol := range vols {
				_, ok := devicesOf(in)[vol]
				res[vol] = ok
			}
			out[id] = res
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InstanceVolumes implements cloud.Provider: one call whatever the number of
// instances. More than BatchSize instances fails with cloud.ErrTerminal. A
// stopped instance maps to an empty map; an unknown (deleted, replaced)
// instance is absent from the result.
func (c *Cloud) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	var out map[cloud.InstanceID]map[cloud.VolumeID]string
	err := c.do(ctx, MethodInstanceVolumes, fmt.Sprintf("of %d instances", len(insts)), func() error {
		if err := c.checkBatch(MethodInstanceVolumes, len(insts)); err != nil {
			return err
		}
		out = make(map[cloud.InstanceID]map[cloud.VolumeID]string, len(insts))
		for _, id := range insts {
			if c.insts[id] == nil {
				continue
			}
			res := make(map[cloud.VolumeID]string)
			for vol, dev := range devicesOf(c.insts[id]) {
				res[vol] = dev
			}
			out[id] = res
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Cloud) checkBatch(m Method, n int) error {
	if n > c.batch {
		return fmt.Errorf("sim: %s: %d instances exceed the batch size of %d: %w", m, n, c.batch, cloud.ErrTerminal)
	}
	return nil
}

// devicesOf returns what in has attached: nothing if in is nil (unknown)
// or stopped. The result must not be modified.
func devicesOf(in *instance) map[cloud.VolumeID]string {
	if in == nil || !in.running {
		return nil
	}
	return in.devices
}

func (c *Cloud) lookupLocked(m Method, vol cloud.VolumeID, id cloud.InstanceID) (*volume, *instance, error) {
	v, ok := c.vols[vol]
	if !ok {
		return nil, nil, fmt.Errorf("sim: %s %s/%s: volume %s not found: %w", m, vol, id, vol, cloud.ErrNotFound)
	}
	in, ok := c.insts[id]
	if !ok {
		return nil, nil, fmt.Errorf("sim: %s %s/%s: instance %s not found: %w", m, vol, id, id, cloud.ErrNotFound)
	}
	return v, in, nil
}

// removeLocked removes the attachment of v to in and records the change.
func (c *Cloud) removeLocked(v *volume, in *instance, reason string) {
	delete(in.devices, v.id)
	delete(v.attached, in.id)
	c.touchInstLocked(in.id)
	c.recordLocked(v, in, false, reason)
}
