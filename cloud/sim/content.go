package sim

// Volume content: with Config.ContentDir set, each volume has a directory
// <ContentDir>/<volume> standing for its disk, so that a node agent can
// mount "the device" it was told about and data survives a detach and an
// attach elsewhere, as on a real disk. Besides the state file (StatePath,
// state.go), this is the one thing the sim writes to disk; it only ever
// creates directories there, never removes any.

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
)

// contentMode is the mode of content directories (and of ContentDir, if
// CreateVolume has to create it).
const contentMode = 0o750

// contentRoot makes dir absolute and clean; "" stays "" (no content).
func contentRoot(dir string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// validVolume checks that a volume ID may become a path component.
func validVolume(id cloud.VolumeID) error {
	return layout.ValidName(layout.KindVolume, string(id))
}

// CreateVolumeChecked is CreateVolume that reports errors: an id that is not
// a valid name (layout.ValidName; wraps layout.ErrInvalidName) creates
// nothing, not even the volume, and a content directory that cannot be
// created is an error (the volume exists then, and a retry completes it).
// With Config.StatePath set, a volume whose creation cannot be written is
// an error too (the volume does not exist then). Without ContentDir and
// StatePath only the name check is added.
func (c *Cloud) CreateVolumeChecked(id cloud.VolumeID, mode cloud.AccessMode) error {
	if err := validVolume(id); err != nil {
		return fmt.Errorf("sim: create volume: %w", err)
	}
	if err := c.createVolume(id, mode); err != nil {
		return err
	}
	if c.content == "" {
		return nil
	}
	return c.makeContent(id)
}

// makeContent creates the content directory of a valid volume ID.
// Idempotent; it runs without the lock (directories are created
// atomically, and concurrent creations of one directory both succeed).
func (c *Cloud) makeContent(id cloud.VolumeID) error {
	if err := os.MkdirAll(filepath.Join(c.content, string(id)), contentMode); err != nil {
		return fmt.Errorf("sim: create volume %s: content directory: %w", id, err)
	}
	return nil
}

// DeviceSource returns the directory holding the content of the volume
// attached to inst at devicePath: the "block device" a node mounts. It
// fails with cloud.ErrNotFound (wrapped, naming instance and device) unless
// that volume is attached to that running instance at that device path
// right now, when ContentDir is unset, or when the volume ID is not a valid
// name (such a volume has no content). It is not a provider call: it is
// not counted, throttled, delayed or subject to injected errors.
func (c *Cloud) DeviceSource(inst cloud.InstanceID, devicePath string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	notFound := func(why string) error {
		return fmt.Errorf("sim: device source of %s on %s: %s: %w", devicePath, inst, why, cloud.ErrNotFound)
	}
	if c.content == "" {
		return "", notFound("volumes have no content (no ContentDir)")
	}
	in, ok := c.insts[inst]
	switch {
	case !ok:
		return "", notFound("instance not found")
	case !in.running:
		return "", notFound("instance not running")
	}
	for vol, dev := range in.devices {
		if dev != devicePath {
			continue
		}
		if err := validVolume(vol); err != nil {
			return "", notFound(fmt.Sprintf("volume %q has no content: %v", vol, err))
		}
		return filepath.Join(c.content, string(vol)), nil
	}
	return "", notFound("no volume attached at that device")
}
