package loop

// Volumes from the cloud's side: creating and deleting disks, reading one.
// Not provider calls: no context, no deadline.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tether/tether/cloud"
)

// VolumeSpec is a disk to create.
type VolumeSpec struct {
	ID   cloud.VolumeID
	Mode cloud.AccessMode
	// Size is the image's size in bytes: a positive multiple of 512. The
	// image is sparse: it takes disk space as it is written.
	Size int64
	// ReadOnly makes every device of the volume read-only (a MultiNode
	// read-only volume is ReadOnlyMany). A read-write MultiNode volume
	// gives each instance a read-write device of the same image: what is
	// on it must bear that (ReadWriteMany), as on a multi-attach disk.
	ReadOnly bool
	// Prepare, if set, puts content on the new image: it is called with
	// the image's path once the image is made (zeroed, Size bytes), before
	// the state records the volume and so before any device is bound to
	// it, under the cloud's lock; what it wrote is synced before the
	// record. An error creates nothing. The cloud never formats anything
	// itself: this is how its caller gives a disk a filesystem that no
	// node can make, such as a ReadOnly one's, whose every device is
	// read-only. A volume that exists already is not prepared again.
	Prepare func(image string) error
}

// CreateVolume creates a detached read-write volume of size bytes (see
// CreateVolumes).
func (c *Cloud) CreateVolume(id cloud.VolumeID, mode cloud.AccessMode, size int64) error {
	return c.CreateVolumes([]VolumeSpec{{ID: id, Mode: mode, Size: size}})
}

// CreateVolumes creates detached volumes: each a new, sparse, zeroed
// image, then one write of the state. A volume that exists already is
// left as it is, whatever its spec says (a real cloud cannot change a
// disk's mode either). An invalid ID or size creates nothing; an image or
// a state write that fails creates nothing either (the images made are
// removed).
func (c *Cloud) CreateVolumes(specs []VolumeSpec) error {
	if err := validSpecs(specs); err != nil {
		return err
	}
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return err
	}
	next := c.cur.Load().clone()
	var made []cloud.VolumeID
	undo := func(err error) error {
		for _, id := range made {
			_ = removeImage(c.image(id))
		}
		return err
	}
	for _, s := range specs {
		if _, ok := next.Volumes[s.ID]; ok {
			continue
		}
		if err := c.releaseOrphans(next, s.ID); err != nil {
			return undo(fmt.Errorf("loop: create volume %s: %w", s.ID, err))
		}
		if err := makeImage(c.images, s.ID, s.Size); err != nil {
			return undo(fmt.Errorf("loop: create volume %s: image: %w", s.ID, err))
		}
		made = append(made, s.ID)
		if s.Prepare != nil {
			if err := prepareImage(c.image(s.ID), s.Prepare); err != nil {
				return undo(fmt.Errorf("loop: create volume %s: preparing its image: %w", s.ID, err))
			}
		}
		next.Volumes[s.ID] = volume{Mode: accessMode(s.Mode), Size: s.Size, ReadOnly: s.ReadOnly}
	}
	if len(made) == 0 {
		return nil
	}
	if err := c.commit(next); err != nil {
		return undo(fmt.Errorf("loop: create %d volumes: %w", len(made), err))
	}
	return nil
}

func validSpecs(specs []VolumeSpec) error {
	for _, s := range specs {
		if err := validVolume(s.ID); err != nil {
			return badName("create volume", err)
		}
		if err := validSize(s.Size); err != nil {
			return fmt.Errorf("loop: create volume %s: %w", s.ID, err)
		}
		if s.Mode != cloud.Exclusive && s.Mode != cloud.MultiNode {
			return fmt.Errorf("loop: create volume %s: unknown access mode %v", s.ID, s.Mode)
		}
	}
	return nil
}

// DeleteVolume deletes a detached volume and its image. It fails with
// cloud.ErrNotFound if the volume is unknown and with ErrVolumeInUse
// (naming the instances) if it is attached anywhere. The state is written
// before the image is removed: an image a crash left behind is replaced
// when a volume of that name is created again.
func (c *Cloud) DeleteVolume(id cloud.VolumeID) error {
	if err := validVolume(id); err != nil {
		return badName("delete volume", err)
	}
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return err
	}
	w := c.cur.Load()
	v, ok := w.Volumes[id]
	switch {
	case !ok:
		return fmt.Errorf("loop: delete volume %s: %w", id, cloud.ErrNotFound)
	case len(v.Attached) > 0:
		insts := slices.Sorted(maps.Keys(v.Attached))
		return fmt.Errorf("loop: delete volume %s: attached to %v: %w", id, insts, ErrVolumeInUse)
	}
	if err := c.releaseOrphans(w, id); err != nil {
		return fmt.Errorf("loop: delete volume %s: %w", id, err)
	}
	next := w.clone()
	delete(next.Volumes, id)
	if err := c.commit(next); err != nil {
		return fmt.Errorf("loop: delete volume %s: %w", id, err)
	}
	if err := removeImage(c.image(id)); err != nil {
		return fmt.Errorf("loop: delete volume %s: deleted, but its image stays: %w", id, err)
	}
	return nil
}

// VolumeReadOnly reports whether volume id was created ReadOnly (every
// device of it bound read-only), or ok=false when there is no such
// volume.
func (c *Cloud) VolumeReadOnly(id cloud.VolumeID) (readOnly, ok bool) {
	w, err := c.view()
	if err != nil {
		return false, false
	}
	v, ok := w.Volumes[id]
	return v.ReadOnly, ok
}

// Volume returns the access mode of volume id and the instances it is
// attached to (sorted), or ok=false when there is no such volume.
func (c *Cloud) Volume(id cloud.VolumeID) (mode cloud.AccessMode, attachedTo []cloud.InstanceID, ok bool) {
	w, err := c.view()
	if err != nil {
		return 0, nil, false
	}
	v, ok := w.Volumes[id]
	if !ok {
		return 0, nil, false
	}
	return v.Mode.mode(), slices.Sorted(maps.Keys(v.Attached)), true
}
