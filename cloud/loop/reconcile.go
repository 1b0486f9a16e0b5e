package loop

// Bringing the state and the kernel together: at Open (reconcile), before
// a bind (releaseOrphans) and on demand (ReleaseAll).

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tether/tether/cloud"
)

// reconcilePlan is what Open must do to a world, given what the kernel
// says of its recorded devices.
type reconcilePlan struct {
	next    *world          // the records that hold, without the stale ones
	stale   []attachmentRef // attachments whose device must be bound anew
	changed bool            // next differs from the world planned from
}

// planReconcile decides, for each recorded attachment in order, whether
// its device still holds its image (observed: what the recorded devices
// are bound to; ids: the images' identities). A device claimed by two
// records holds for the first only. A record that holds but names its
// image by an old path (the data directory moved) is updated.
func planReconcile(w *world, images string, ids map[cloud.VolumeID]fileID, observed map[string]binding) reconcilePlan {
	p := reconcilePlan{next: w.clone()}
	claimed := make(map[string]bool)
	for _, ref := range w.attachments() {
		v := w.Volumes[ref.Vol]
		a, image := v.Attached[ref.Inst], imagePath(images, ref.Vol)
		b, bound := observed[a.Device]
		if bound && !claimed[a.Device] && holds(b, image, ids[ref.Vol], v.ReadOnly) {
			claimed[a.Device] = true
			if a.Image != image {
				p.next.setAttachment(ref.Vol, ref.Inst, attachment{Device: a.Device, Image: image})
				p.changed = true
			}
			continue
		}
		p.next.removeAttachment(ref.Vol, ref.Inst)
		p.stale = append(p.stale, ref)
		p.changed = true
	}
	return p
}

// reconcile runs at Open, before the Cloud is shared: every volume's
// image must be there; a recorded device that no longer holds its image
// (the host rebooted, or it was released or rebound behind the cloud's
// back) is replaced by a new device of the image; devices bound to an
// image and claimed by no record are released. A new device that cannot
// be bound fails Open, releasing the devices it bound.
func (c *Cloud) reconcile() error {
	w := c.cur.Load()
	ids, observed, err := c.observe(w)
	if err != nil {
		return fmt.Errorf("loop: open: %w", err)
	}
	p := planReconcile(w, c.images, ids, observed)
	if err := c.releaseOrphans(p.next, ""); err != nil {
		return fmt.Errorf("loop: open: release devices no attachment claims: %w", err)
	}
	var bound []attachment
	fail := func(err error) error {
		for _, a := range bound {
			err = c.unbind(a.Device, a.Image, err)
		}
		return err
	}
	for _, ref := range p.stale {
		image := c.image(ref.Vol)
		dev, err := c.dev.bind(image, p.next.Volumes[ref.Vol].ReadOnly)
		if err != nil {
			return fail(fmt.Errorf("loop: open: restore the attachment of %s to %s: %w", ref.Vol, ref.Inst, err))
		}
		a := attachment{Device: dev, Image: image}
		bound = append(bound, a)
		p.next.setAttachment(ref.Vol, ref.Inst, a)
	}
	if !p.changed {
		return nil
	}
	if err := c.commit(p.next); err != nil {
		return fail(fmt.Errorf("loop: open: %w", err))
	}
	return nil
}

// observe returns the identity of every volume's image and what each
// recorded device is bound to (unbound devices are absent).
func (c *Cloud) observe(w *world) (map[cloud.VolumeID]fileID, map[string]binding, error) {
	ids := make(map[cloud.VolumeID]fileID, len(w.Volumes))
	for _, vol := range slices.Sorted(maps.Keys(w.Volumes)) {
		id, err := identify(c.image(vol))
		if err != nil {
			return nil, nil, fmt.Errorf("volume %s: image: %w", vol, err)
		}
		ids[vol] = id
	}
	observed := make(map[string]binding)
	for _, ref := range w.attachments() {
		dev := w.Volumes[ref.Vol].Attached[ref.Inst].Device
		b, bound, err := c.dev.inspect(dev)
		if err != nil {
			return nil, nil, err
		}
		if bound {
			observed[dev] = b
		}
	}
	return ids, observed, nil
}

// releaseOrphans releases the loop devices bound to an image of this
// cloud that no record of w claims (see orphan): those of volume vol, or
// every one if vol is "". Each is checked again on an open descriptor
// before it is released (devices.release).
func (c *Cloud) releaseOrphans(w *world, vol cloud.VolumeID) error {
	all, err := c.dev.backings()
	if err != nil {
		return err
	}
	var errs []error
	for _, dev := range slices.Sorted(maps.Keys(all)) {
		v, ok := orphan(w, c.images, dev, all[dev])
		if !ok || (vol != "" && v != vol) {
			continue
		}
		if _, err := c.dev.release(dev, ofImage(c.image(v))); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReleaseAll detaches every volume from every instance and releases every
// loop device bound to an image of this cloud, recorded or not (orphans
// that a crash or a failed release left): what a test's cleanup or an
// operator tearing the cloud down calls. The state is written first;
// devices that cannot be released are named in the error, and the next
// ReleaseAll or Open releases them. Instances and volumes stay.
func (c *Cloud) ReleaseAll() error {
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return err
	}
	w := c.cur.Load()
	if refs := w.attachments(); len(refs) > 0 {
		next := w.clone()
		for _, ref := range refs {
			next.removeAttachment(ref.Vol, ref.Inst)
		}
		if err := c.commit(next); err != nil {
			return fmt.Errorf("loop: release all: %w", err)
		}
	}
	if err := c.releaseOrphans(c.cur.Load(), ""); err != nil {
		return fmt.Errorf("loop: release all: %w", err)
	}
	return nil
}

// releaseGone releases the devices of attachments just removed from the
// state (Terminate, Replace, Delete) and says which could not be.
func (c *Cloud) releaseGone(what string, gone map[cloud.VolumeID]attachment) error {
	var errs []error
	for _, vol := range slices.Sorted(maps.Keys(gone)) {
		a := gone[vol]
		if _, err := c.dev.release(a.Device, ofImage(c.image(vol))); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", vol, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("loop: %s: done, but devices stay bound until ReleaseAll or Open releases them: %w", what, err)
	}
	return nil
}
