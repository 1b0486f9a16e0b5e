package sim

// Volumes from the cloud's side: reading one volume's ground truth and
// deleting a volume, as an operator (or tether's provisioning, undoing what
// a failed apply created) does in a cloud console. Neither is a provider
// call: they are not counted, throttled, delayed or subject to injected
// errors.

import (
	"errors"
	"fmt"

	"github.com/tether/tether/cloud"
)

// ErrVolumeInUse is wrapped by DeleteVolume when the volume is attached:
// a cloud deletes only detached disks.
var ErrVolumeInUse = errors.New("sim: volume in use")

// Volume returns the access mode of volume id, fixed when it was created,
// and the instances it is attached to (sorted), or ok=false when the cloud
// has no such volume.
func (c *Cloud) Volume(id cloud.VolumeID) (mode cloud.AccessMode, attachedTo []cloud.InstanceID, ok bool) {
	c.lockSettled()
	defer c.mu.Unlock()
	v, ok := c.vols[id]
	if !ok {
		return 0, nil, false
	}
	return v.mode, sortedKeys(v.attached), true
}

// DeleteVolume deletes a detached volume: calls naming it fail with
// cloud.ErrNotFound from then on, and CreateVolume may create it again,
// with any mode. It fails with cloud.ErrNotFound if the volume is unknown,
// with ErrVolumeInUse (naming the instances) if it is attached anywhere,
// and with Config.StatePath set, when the change cannot be written (then
// the volume still exists). Its content directory (Config.ContentDir) is
// left in place, like every directory the sim makes: a volume created
// again under the same ID finds it.
func (c *Cloud) DeleteVolume(id cloud.VolumeID) error {
	c.mu.Lock()
	v, ok := c.vols[id]
	switch {
	case !ok:
		c.mu.Unlock()
		return fmt.Errorf("sim: delete volume %s: %w", id, cloud.ErrNotFound)
	case len(v.attached) > 0:
		insts := sortedKeys(v.attached)
		c.mu.Unlock()
		return fmt.Errorf("sim: delete volume %s: attached to %v: %w", id, insts, ErrVolumeInUse)
	}
	delete(c.vols, id)
	c.touchVolLocked(id)
	return c.commitUnlock("delete volume " + string(id))
}

// CreateVolumeUncommitted is CreateVolumeChecked for a disk that an apply
// needs before it commits: a disk it creates carries the "uncommitted" tag
// (durable, like everything in the state file) until CommitVolume, as a
// real cloud's disks carry the tags of whoever made them. A disk that
// exists already is left as it is, tag included. A disk still tagged when
// its apply is long gone was made by an apply that never committed (the
// process was killed in between): it was never attached, so it holds
// nothing, and may be deleted and made again with another mode. An
// untagged disk may hold data: only an operator deletes it.
func (c *Cloud) CreateVolumeUncommitted(id cloud.VolumeID, mode cloud.AccessMode) error {
	if err := validVolume(id); err != nil {
		return fmt.Errorf("sim: create volume: %w", err)
	}
	c.mu.Lock()
	if _, ok := c.vols[id]; ok {
		c.mu.Unlock()
	} else {
		c.vols[id] = &volume{id: id, mode: mode, uncommitted: true, attached: make(map[cloud.InstanceID]struct{})}
		c.touchVolLocked(id)
		if err := c.commitUnlock("create volume " + string(id)); err != nil {
			return err
		}
	}
	if c.content == "" {
		return nil
	}
	return c.makeContent(id)
}

// CommitVolume removes the "uncommitted" tag (see CreateVolumeUncommitted);
// an untagged volume is left alone. It fails with cloud.ErrNotFound if the
// volume is unknown, and with Config.StatePath set, when the change cannot
// be written (then the tag stays).
func (c *Cloud) CommitVolume(id cloud.VolumeID) error {
	c.mu.Lock()
	v, ok := c.vols[id]
	switch {
	case !ok:
		c.mu.Unlock()
		return fmt.Errorf("sim: commit volume %s: %w", id, cloud.ErrNotFound)
	case !v.uncommitted:
		c.mu.Unlock()
		return nil
	}
	v.uncommitted = false // a failed write reverts it (commitLocked)
	c.touchVolLocked(id)
	return c.commitUnlock("commit volume " + string(id))
}

// Disks describes the disks of ids that exist, as of one moment. It never
// fails; the error is a remote cloud's (cloud/remote.Client.Disks).
func (c *Cloud) Disks(ids []cloud.VolumeID) (map[cloud.VolumeID]cloud.Disk, error) {
	c.lockSettled()
	defer c.mu.Unlock()
	out := make(map[cloud.VolumeID]cloud.Disk, len(ids))
	for _, id := range ids {
		if v, ok := c.vols[id]; ok {
			out[id] = cloud.Disk{Mode: v.mode, AttachedTo: sortedKeys(v.attached), Uncommitted: v.uncommitted}
		}
	}
	return out, nil
}

// Uncommitted reports whether volume id exists and carries the
// "uncommitted" tag.
func (c *Cloud) Uncommitted(id cloud.VolumeID) bool {
	c.lockSettled()
	defer c.mu.Unlock()
	v, ok := c.vols[id]
	return ok && v.uncommitted
}

// CreateVolumesUncommitted is CreateVolumeUncommitted for many disks, all
// or nothing, with one durable commit: if an ID is not a valid name, or
// the change cannot be written, no disk is created. Disks that exist
// already (or appear twice) are left as they are. Content directories are
// made after the commit, as CreateVolumeUncommitted makes them: an error
// there leaves the disks created.
func (c *Cloud) CreateVolumesUncommitted(vols []cloud.VolumeSpec) error {
	for _, v := range vols {
		if err := validVolume(v.ID); err != nil {
			return fmt.Errorf("sim: create volumes: %w", err)
		}
	}
	c.mu.Lock()
	n := 0
	for _, v := range vols {
		if _, ok := c.vols[v.ID]; !ok {
			c.vols[v.ID] = &volume{id: v.ID, mode: v.Mode, uncommitted: true, attached: make(map[cloud.InstanceID]struct{})}
			c.touchVolLocked(v.ID)
			n++
		}
	}
	if n == 0 {
		c.mu.Unlock()
	} else if err := c.commitUnlock(fmt.Sprintf("create %d volumes", n)); err != nil {
		return err
	}
	if c.content == "" {
		return nil
	}
	ids := make([]cloud.VolumeID, len(vols))
	for i, v := range vols {
		ids[i] = v.ID
	}
	return c.makeContents(ids)
}

// CommitVolumes is CommitVolume for many volumes, all or nothing, with one
// durable commit: if a volume is unknown (cloud.ErrNotFound) or the change
// cannot be written, every tag stays.
func (c *Cloud) CommitVolumes(ids []cloud.VolumeID) error {
	c.mu.Lock()
	var tagged []*volume
	for _, id := range ids {
		v, ok := c.vols[id]
		if !ok {
			c.mu.Unlock()
			return fmt.Errorf("sim: commit volume %s: %w", id, cloud.ErrNotFound)
		}
		if v.uncommitted {
			tagged = append(tagged, v)
		}
	}
	if len(tagged) == 0 {
		c.mu.Unlock()
		return nil
	}
	for _, v := range tagged {
		v.uncommitted = false // a failed write reverts it (commitLocked)
		c.touchVolLocked(v.id)
	}
	return c.commitUnlock(fmt.Sprintf("commit %d volumes", len(tagged)))
}
