package loop

import (
	"context"
	"fmt"

	"github.com/tether/tether/cloud"
)

// InstanceID implements cloud.Provider. A stopped instance still resolves
// until Start; a node without an instance fails with cloud.ErrNotFound.
func (c *Cloud) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	if err := validNode(node); err != nil {
		return "", badName("instance_id", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	w, err := c.view()
	if err != nil {
		return "", err
	}
	id, ok := w.nodes[node]
	if !ok {
		return "", fmt.Errorf("loop: instance_id: no instance backs node %s: %w", node, cloud.ErrNotFound)
	}
	return id, nil
}

// Attach implements cloud.Provider: it binds a loop device to the
// volume's image, read-only if the volume is, and returns its path. The
// checks, in order, are world.checkAttach's; an invalid name fails first,
// with cloud.ErrTerminal. Attaching again what is attached returns the
// same device if it still holds the image; if it does not (released or
// rebound behind the cloud's back) a new device is bound and returned. No
// free loop device, a device of the image that cannot be released, or a
// state file that cannot be written fail it with cloud.ErrRetryable,
// without effect.
func (c *Cloud) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	if err := validCall("attach", vol, inst); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err // never sent
	}
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return "", err
	}
	w := c.cur.Load()
	a, ok, err := w.checkAttach(vol, inst)
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("attach %s to %s", vol, inst)
	image, ro := c.image(vol), w.Volumes[vol].ReadOnly
	id, err := identify(image)
	if err != nil {
		return "", fmt.Errorf("loop: %s: image: %w: %w", what, err, cloud.ErrTerminal)
	}
	if ok {
		b, bound, err := c.dev.inspect(a.Device)
		if err != nil {
			return "", fmt.Errorf("loop: %s: %w: %w", what, err, cloud.ErrRetryable)
		}
		if bound && holds(b, image, id, ro) {
			return a.Device, nil
		}
	}
	return c.bindLocked(ctx, what, w, vol, inst)
}

// bindLocked binds a new device for vol on inst and records it, replacing
// a stale record of that attachment. Devices of the image that no record
// claims are released first, so that an exclusive volume never has two.
func (c *Cloud) bindLocked(ctx context.Context, what string, w *world, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	if err := c.pastDeadline(ctx, what); err != nil {
		return "", err
	}
	next := w.clone()
	next.removeAttachment(vol, inst)
	if err := c.releaseOrphans(next, vol); err != nil {
		return "", fmt.Errorf("loop: %s: %w: %w", what, err, cloud.ErrRetryable)
	}
	image := c.image(vol)
	dev, err := c.dev.bind(image, next.Volumes[vol].ReadOnly)
	if err != nil {
		return "", fmt.Errorf("loop: %s: %w: %w", what, err, cloud.ErrRetryable)
	}
	if err := c.pastDeadline(ctx, what); err != nil {
		return "", c.unbind(dev, image, err)
	}
	next.setAttachment(vol, inst, attachment{Device: dev, Image: image})
	if err := c.commit(next); err != nil {
		return "", c.unbind(dev, image, fmt.Errorf("loop: %s: %w: %w", what, err, cloud.ErrRetryable))
	}
	return dev, nil
}

// unbind releases dev, just bound to image, after cause made its call
// fail, and returns cause; if dev cannot be released the error says so
// (it is then an orphan: see docs/storage.md#the-loop-cloud-inside).
func (c *Cloud) unbind(dev, image string, cause error) error {
	if _, err := c.dev.release(dev, ofImage(image)); err != nil {
		return fmt.Errorf("%w (and %s stays bound to %s until released: %v)", cause, dev, image, err)
	}
	return cause
}

// Detach implements cloud.Provider: it releases the volume's device on
// inst. A volume not attached to inst succeeds (idempotent); an unknown
// volume or instance fails with cloud.ErrNotFound, an invalid name with
// cloud.ErrTerminal. A recorded device that no longer holds the image is
// left alone (it may be someone else's now) and the record dropped.
func (c *Cloud) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	if err := validCall("detach", vol, inst); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // never sent
	}
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return err
	}
	a, ok, err := c.cur.Load().checkDetach(vol, inst)
	if err != nil || !ok {
		return err
	}
	what := fmt.Sprintf("detach %s from %s", vol, inst)
	if err := c.pastDeadline(ctx, what); err != nil {
		return err
	}
	return c.detachLocked(what, vol, inst, a)
}

// detachLocked removes an attachment: the state first, then the device,
// so that a crash in between leaves an orphan device (released by Open),
// never a record whose device was released. A device that cannot be
// released puts the record back, so that the error means no effect;
// should that write fail too, the cloud says detached and the device is an
// orphan.
func (c *Cloud) detachLocked(what string, vol cloud.VolumeID, inst cloud.InstanceID, a attachment) error {
	prev := c.cur.Load()
	next := prev.clone()
	next.removeAttachment(vol, inst)
	if err := c.save(next); err != nil {
		return fmt.Errorf("loop: %s: %w: %w", what, err, cloud.ErrRetryable)
	}
	_, err := c.dev.release(a.Device, ofImage(c.image(vol)))
	if err == nil {
		c.publish(next)
		return nil
	}
	if rerr := c.save(prev); rerr != nil {
		c.publish(next)
		return fmt.Errorf("loop: %s: device %s not released (%w), and the attachment not restored (%w): it is an orphan now: %w",
			what, a.Device, err, rerr, cloud.ErrRetryable)
	}
	return fmt.Errorf("loop: %s: device %s not released: %w: %w", what, a.Device, err, cloud.ErrRetryable)
}

// VolumesAreAttached implements cloud.Provider, from the state: one call
// whatever the number of instances, at most BatchSize of them (more fail
// with cloud.ErrTerminal). An unknown or stopped instance maps every
// listed volume to false.
func (c *Cloud) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	w, err := c.query(ctx, "volumes_are_attached", len(query))
	if err != nil {
		return nil, err
	}
	out := make(map[cloud.InstanceID]map[cloud.VolumeID]bool, len(query))
	for inst, vols := range query {
		res := make(map[cloud.VolumeID]bool, len(vols))
		for _, vol := range vols {
			_, res[vol] = w.Volumes[vol].Attached[inst]
		}
		out[inst] = res
	}
	return out, nil
}

// InstanceVolumes implements cloud.Provider, from the state: one call
// whatever the number of instances, at most BatchSize of them (more fail
// with cloud.ErrTerminal). A stopped instance maps to an empty map; an
// unknown (deleted, replaced) one is absent.
func (c *Cloud) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	w, err := c.query(ctx, "instance_volumes", len(insts))
	if err != nil {
		return nil, err
	}
	out := make(map[cloud.InstanceID]map[cloud.VolumeID]string, len(insts))
	for _, inst := range insts {
		if _, ok := w.Instances[inst]; !ok {
			continue
		}
		out[inst] = make(map[cloud.VolumeID]string)
		for vol, a := range w.attachedTo(inst) {
			out[inst][vol] = a.Device
		}
	}
	return out, nil
}

// query starts a bulk query of n instances: the published world.
func (c *Cloud) query(ctx context.Context, method string, n int) (*world, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n > c.batch {
		return nil, fmt.Errorf("loop: %s: %d instances exceed the batch size of %d: %w", method, n, c.batch, cloud.ErrTerminal)
	}
	return c.view()
}

// Attachments returns the ground truth as the cloud records it: every
// attached volume, mapped to its instances in sorted order.
func (c *Cloud) Attachments() map[cloud.VolumeID][]cloud.InstanceID {
	w, err := c.view()
	if err != nil {
		return nil
	}
	out := make(map[cloud.VolumeID][]cloud.InstanceID)
	for _, ref := range w.attachments() {
		out[ref.Vol] = append(out[ref.Vol], ref.Inst)
	}
	return out
}
