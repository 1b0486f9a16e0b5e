package sim

// Volume content: with Config.ContentDir set, each volume has a directory
// <ContentDir>/<volume> standing for its disk, so that a node agent can
// mount "the device" it was told about and data survives a detach and an
// attach elsewhere, as on a real disk. Besides the state file (StatePath,
// state.go), this is the one thing the sim writes to disk; it only ever
// creates directories there, never removes any. It never follows a symlink
// in that tree: the content root and every volume's directory must be real
// directories (ErrUnsafeContent otherwise), so that what a node mounts is
// always inside the content root.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
	"github.com/tether/tether/cloud/files/realdir"
)

// ErrUnsafeContent is wrapped by the errors of DeviceSource and of creating
// a volume's content when the content root or the volume's directory is not
// a real directory (a symlink, say) or resolves outside the content root.
// Nothing is then created there, and no path is returned.
var ErrUnsafeContent = errors.New("sim: volume content is not a real directory in the content root")

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
	return names.ValidName(names.KindVolume, string(id))
}

// CreateVolumeChecked is CreateVolume that reports errors: an id that is not
// a valid name (names.ValidName; wraps names.ErrInvalidName) creates
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
// atomically, and concurrent creations of one directory both succeed). It
// creates the volume's directory only inside a content root that is a real
// directory, and fails if what is there then is not one.
func (c *Cloud) makeContent(id cloud.VolumeID) error {
	return c.makeContents([]cloud.VolumeID{id})
}

// makeContents is makeContent for many volumes, with the content root
// checked once (realdir.Check) rather than with each volume's directory
// (realdir.In, which would lstat the root again for each). A volume's
// directory is a direct child of the root (a valid ID is one path
// element), so once the root is a real directory, a child that is a real
// directory lies right in it, with the symlinks above the root resolved
// too: realdir.Check of the child is all realdir.In would add.
func (c *Cloud) makeContents(ids []cloud.VolumeID) error {
	fail := func(id cloud.VolumeID, err error) error {
		return fmt.Errorf("sim: create volume %s: content directory: %w", id, err)
	}
	if len(ids) == 0 || c.virtual {
		return nil
	}
	if err := os.MkdirAll(c.content, contentMode); err != nil {
		return fail(ids[0], err)
	}
	if err := unsafeContent(realdir.Check(c.content)); err != nil {
		return fail(ids[0], err)
	}
	for _, id := range ids {
		dir := filepath.Join(c.content, string(id))
		if filepath.Dir(dir) != filepath.Clean(c.content) {
			return fail(id, fmt.Errorf("%q is not a direct child of %q: %w", dir, c.content, ErrUnsafeContent))
		}
		if err := os.Mkdir(dir, contentMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fail(id, err)
		}
		if err := unsafeContent(realdir.Check(dir)); err != nil {
			return fail(id, err)
		}
	}
	return nil
}

// ContentDir returns the content root (Config.ContentDir made absolute),
// "" without one: the one directory under which DeviceSource's answers
// lie, for nodes to check them against.
func (c *Cloud) ContentDir() string { return c.content }

// VirtualContent reports Config.VirtualContent: DeviceSource's answers
// name directories that do not exist.
func (c *Cloud) VirtualContent() bool { return c.virtual }

// contentDir returns the content directory of a valid volume ID, checked:
// the content root and the volume's directory are real directories, not
// symlinks, and with every symlink above the root resolved the directory is
// still right in the resolved root. A missing one wraps fs.ErrNotExist.
func (c *Cloud) contentDir(id cloud.VolumeID) (string, error) {
	dir := filepath.Join(c.content, string(id))
	if c.virtual {
		return dir, nil // named, never made (Config.VirtualContent)
	}
	if err := unsafeContent(realdir.In(c.content, dir)); err != nil {
		return "", err
	}
	return dir, nil
}

// unsafeContent adds ErrUnsafeContent to a realdir refusal.
func unsafeContent(err error) error {
	if errors.Is(err, realdir.ErrUnsafe) {
		return fmt.Errorf("%w: %w", err, ErrUnsafeContent)
	}
	return err
}

// DeviceSource returns the directory holding the content of the volume
// attached to inst at devicePath: the "block device" a node mounts. It
// fails with cloud.ErrNotFound (wrapped, naming instance and device) unless
// that volume is attached to that running instance at that device path
// right now, when ContentDir is unset, or when the volume ID is not a valid
// name (such a volume has no content). It is not a provider call: it is
// not counted, throttled, delayed or subject to injected errors. A content
// directory that is not a real directory in the content root (a symlink, in
// it or as it) is never returned: that error wraps ErrUnsafeContent, and
// names the path. The volume is looked up under the cloud's lock and its
// directory checked after unlocking: the content root is immutable and the
// lock does not guard the filesystem, so no other call of any node waits
// for the check's lstat's.
func (c *Cloud) DeviceSource(inst cloud.InstanceID, devicePath string) (string, error) {
	vol, err := c.deviceVolume(inst, devicePath)
	if err != nil {
		return "", err
	}
	dir, err := c.contentDir(vol)
	if err != nil {
		return "", fmt.Errorf("sim: device source of %s on %s: volume %s: %w", devicePath, inst, vol, err)
	}
	return dir, nil
}

// deviceVolume is DeviceSource's lookup, under the lock: the volume, with
// a valid ID, attached to the running inst at devicePath.
func (c *Cloud) deviceVolume(inst cloud.InstanceID, devicePath string) (cloud.VolumeID, error) {
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
		return vol, nil
	}
	return "", notFound("no volume attached at that device")
}
