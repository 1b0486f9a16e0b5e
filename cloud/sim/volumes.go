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
	c.mu.Lock()
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
	mark := len(c.obs.queue)
	delete(c.vols, id)
	return c.commitUnlock(mark, "delete volume "+string(id))
}
