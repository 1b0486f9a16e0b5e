package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/loopsys"
)

// holdLoop opens the loop device at path and returns it held, with the
// backing file the kernel shows for it (" (deleted)" appended when the
// file was deleted since) and its number ("MAJ:MIN"), read through the
// held device's own number, so that a device node at an unexpected path is
// judged by what it is. A path that is not a block device (a symlink
// included; it is looked at before it is opened, as opening a character
// device or a FIFO can do things), or a device that is not a bound loop
// device, is an error wrapping cloud.ErrNotFound. Nothing is held after an
// error.
func holdLoop(path string) (heldLoop, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return heldLoop{}, fmt.Errorf("no such device: %w", cloud.ErrNotFound)
	}
	if err != nil {
		return heldLoop{}, err
	}
	if fi.Mode().Type() != fs.ModeDevice {
		return heldLoop{}, fmt.Errorf("not a block device (%s): %w", fi.Mode().Type(), cloud.ErrNotFound)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
		return heldLoop{}, fmt.Errorf("no such device: %w", cloud.ErrNotFound)
	case errors.Is(err, unix.ELOOP):
		return heldLoop{}, fmt.Errorf("not a block device (a symlink now): %w", cloud.ErrNotFound)
	case err != nil:
		return heldLoop{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	h := heldLoop{f: os.NewFile(uintptr(fd), path)}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		h.f.Close()
		return heldLoop{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		h.f.Close()
		return heldLoop{}, fmt.Errorf("not a block device once opened: %w", cloud.ErrNotFound)
	}
	dev := uint64(st.Rdev) // not a uint64 on every architecture
	h.num = fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	sys := "/sys/dev/block/" + h.num + "/loop/backing_file"
	raw, bound, err := loopsys.ReadBacking(sys)
	if err != nil {
		h.f.Close()
		return heldLoop{}, err
	}
	if !bound {
		h.f.Close()
		return heldLoop{}, fmt.Errorf("not a bound loop device (no %s): %w", sys, cloud.ErrNotFound)
	}
	h.backing = strings.TrimSuffix(raw, "\n")
	return h, nil
}

// loopBacking is holdLoop holding nothing: what the device at path is
// bound to now, and its number.
func loopBacking(path string) (backing, num string, err error) {
	h, err := holdLoop(path)
	if err != nil {
		return "", "", err
	}
	h.f.Close()
	return h.backing, h.num, nil
}

// loopReadOnly reports whether the kernel has the block device numbered
// num ("MAJ:MIN") read-only.
func loopReadOnly(num string) (bool, error) {
	return sysReadOnly("/sys/dev/block/" + num)
}

// sysReadOnly reads the read-only flag of the block device whose sysfs
// directory is dir.
func sysReadOnly(dir string) (bool, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ro"))
	if err != nil {
		return false, err
	}
	switch strings.TrimSpace(string(raw)) {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s/ro holds %q", dir, raw)
}

// otherLoops returns the loop devices other than the one numbered num
// that the kernel shows bound to image (a release deferred while the
// device is in use included), and whether each is read-only.
func otherLoops(image, num string) ([]boundLoop, error) {
	files, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	var out []boundLoop
	for _, f := range files {
		dir := filepath.Dir(filepath.Dir(f)) // /sys/block/loopN
		raw, bound, err := loopsys.ReadBacking(f)
		if err != nil {
			return nil, err
		}
		if !bound {
			continue // released meanwhile
		}
		if strings.TrimSuffix(raw, "\n") != image {
			continue
		}
		n, err := os.ReadFile(filepath.Join(dir, "dev"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if strings.TrimSpace(string(n)) == num {
			continue
		}
		ro, err := sysReadOnly(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, boundLoop{dev: "/dev/" + filepath.Base(dir), readOnly: ro})
	}
	return out, nil
}
