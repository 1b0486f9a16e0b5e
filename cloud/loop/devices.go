package loop

// The kernel side, as the rest of the package sees it: an interface over
// the loop driver (sys_linux.go implements it) and the pure rules that say
// whether a bound device is one of ours.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tether/tether/cloud"
)

// Errors of Open when this host cannot run the cloud. Open's error names
// the reason; a caller prints it as it is.
var (
	// ErrNotRoot: only root may bind loop devices.
	ErrNotRoot = errors.New("loop: the loop cloud must run as root")
	// ErrUnavailable: no loop driver here (no /dev/loop-control, not
	// Linux, a container without access to it).
	ErrUnavailable = errors.New("loop: loop devices are unavailable")
	// ErrInUse: another Cloud (in this process or another) has the data
	// directory open.
	ErrInUse = errors.New("loop: data directory in use by another cloud")
)

// fileID identifies a file: device and inode numbers.
type fileID struct{ Dev, Ino uint64 }

// binding is what a loop device is bound to, as the kernel says.
type binding struct {
	Backing  string // the backing file's path as the kernel shows it, without " (deleted)"
	Deleted  bool   // the backing file has been deleted since it was bound
	File     fileID
	ReadOnly bool
}

// devices is the loop driver. Every method may be called concurrently.
type devices interface {
	// bind binds a free loop device to image, read-only if readOnly, and
	// returns its path ("/dev/loopN").
	bind(image string, readOnly bool) (string, error)
	// release unbinds dev if mine holds for its binding, checked while an
	// open descriptor on dev pins that binding (the kernel defers anyone
	// else's release until that descriptor is closed, and never rebinds a
	// bound device), so that it never releases a device that stopped being
	// ours in between. released is false, and dev untouched, when dev is
	// not bound or mine is false.
	release(dev string, mine func(binding) bool) (released bool, err error)
	// inspect returns what dev is bound to; ok is false if it is not bound
	// (or does not exist).
	inspect(dev string) (b binding, ok bool, err error)
	// backings returns every bound loop device's backing file path as the
	// kernel shows it, " (deleted)" included.
	backings() (map[string]string, error)
}

// deletedSuffix is what the kernel appends to the path of a backing file
// that has been deleted.
const deletedSuffix = " (deleted)"

// parseBacking splits a backing file path as sysfs shows it.
func parseBacking(raw string) (path string, deleted bool) {
	raw = strings.TrimSuffix(raw, "\n")
	path, deleted = strings.CutSuffix(raw, deletedSuffix)
	return path, deleted
}

// imageSuffix ends every image's file name.
const imageSuffix = ".img"

// imageOf returns the volume whose image (in the images directory) is the
// backing file the kernel shows as backing, deleted or not; ok is false
// for any other file, including files there whose names no volume could
// have. A device bound to such an image is the cloud's, recorded or not.
func imageOf(images, backing string) (vol cloud.VolumeID, ok bool) {
	path, _ := parseBacking(backing)
	base, found := strings.CutSuffix(filepath.Base(path), imageSuffix)
	if !found || filepath.Dir(path) != images || validVolume(cloud.VolumeID(base)) != nil {
		return "", false
	}
	return cloud.VolumeID(base), true
}

// orphan reports whether dev, whose backing file the kernel shows as
// backing, is bound to an image of w's data directory (images) with no
// record of w claiming it, and names the image's volume.
func orphan(w *world, images, dev, backing string) (cloud.VolumeID, bool) {
	vol, ok := imageOf(images, backing)
	if !ok {
		return "", false
	}
	for _, a := range w.Volumes[vol].Attached {
		if a.Device == dev {
			return "", false
		}
	}
	return vol, true
}

// ofImage returns the test that a binding belongs to the image at path:
// bound to the file there, or to one deleted from there. It is what
// release checks before it unbinds a device: never one bound elsewhere.
func ofImage(path string) func(binding) bool {
	return func(b binding) bool { return b.Backing == path }
}

// holds reports whether b is what an attachment of the image at path,
// whose identity is id, must be: bound to that file, still there (a
// deleted file's inode number may have been reused), read-only as the
// volume says.
func holds(b binding, path string, id fileID, readOnly bool) bool {
	return b.Backing == path && !b.Deleted && b.File == id && b.ReadOnly == readOnly
}

// preflight says whether a process with effective user euid, whose
// attempt to open the loop control device failed with ctlErr (nil: it
// opened), can run the cloud.
func preflight(euid int, ctlErr error) error {
	if euid != 0 {
		return fmt.Errorf("%w (running as uid %d): binding loop devices needs root", ErrNotRoot, euid)
	}
	if ctlErr != nil {
		return fmt.Errorf("%w: %w (is the loop module loaded? try modprobe loop)", ErrUnavailable, ctlErr)
	}
	return nil
}
