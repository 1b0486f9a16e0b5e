package loop

// The loop driver through its ioctls (LOOP_CTL_GET_FREE, LOOP_CONFIGURE,
// LOOP_GET_STATUS64, LOOP_CLR_FD; Linux 5.8 or later) and sysfs. No
// command is run: an open descriptor on a device pins its binding while we
// check it, which a losetup command line cannot do.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/cloud/files/loopsys"
)

const (
	loopControl = "/dev/loop-control"
	sysBlock    = "/sys/block"
	// bindAttempts bounds the retries of a bind whose free device another
	// process took between LOOP_CTL_GET_FREE and LOOP_CONFIGURE.
	bindAttempts = 16
)

// noFollow makes an open fail on a symlink.
const noFollow = unix.O_NOFOLLOW

// kernel is the host's loop driver.
type kernel struct{}

// checkHost is preflight for this process on this host.
func checkHost() error {
	f, err := os.OpenFile(loopControl, os.O_RDWR, 0)
	if err == nil {
		_ = f.Close()
	}
	return preflight(os.Geteuid(), err)
}

func (kernel) bind(image string, readOnly bool) (string, error) {
	flag, loFlags := os.O_RDWR, uint32(0)
	if readOnly {
		flag, loFlags = os.O_RDONLY, unix.LO_FLAGS_READ_ONLY
	}
	img, err := os.OpenFile(image, flag|noFollow, 0)
	if err != nil {
		return "", err
	}
	defer img.Close()
	ctl, err := os.OpenFile(loopControl, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("%w: %w", err, ErrUnavailable)
	}
	defer ctl.Close()
	for range bindAttempts {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("no free loop device: LOOP_CTL_GET_FREE: %w", err)
		}
		dev := devicePrefix + strconv.Itoa(n)
		err = configure(dev, img, loFlags, image)
		if errors.Is(err, unix.EBUSY) {
			continue // another process bound it first
		}
		if err != nil {
			return "", err
		}
		return dev, nil
	}
	return "", fmt.Errorf("no free loop device: another process took each of %d in turn", bindAttempts)
}

// configure binds dev to img. Without LO_FLAGS_AUTOCLEAR: the binding
// outlives the descriptors, as an attachment outlives its caller.
func configure(dev string, img *os.File, loFlags uint32, name string) error {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
	cfg.Info.Flags = loFlags
	copy(cfg.Info.File_name[:unix.LO_NAME_SIZE-1], name)
	if err := unix.IoctlLoopConfigure(int(f.Fd()), &cfg); err != nil {
		return fmt.Errorf("%s: LOOP_CONFIGURE: %w", dev, err)
	}
	return nil
}

func (kernel) release(dev string, mine func(binding) bool) (bool, error) {
	f, err := openDevice(dev)
	if f == nil || err != nil {
		return false, err
	}
	defer f.Close() // the last close of a released device unbinds it
	b, ok, err := inspectFile(f, dev)
	if err != nil || !ok || !mine(b) {
		return false, err
	}
	err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
	switch {
	case errors.Is(err, unix.ENXIO):
		return false, nil // released by someone else first
	case err != nil:
		return false, fmt.Errorf("%s: LOOP_CLR_FD: %w", dev, err)
	}
	return true, nil
}

func (kernel) inspect(dev string) (binding, bool, error) {
	f, err := openDevice(dev)
	if f == nil || err != nil {
		return binding{}, false, err
	}
	defer f.Close()
	return inspectFile(f, dev)
}

// openDevice opens a loop device read-only; nil and no error if it does
// not exist. dev must be a loop device path: no other path is opened.
func openDevice(dev string) (*os.File, error) {
	if _, ok := loopIndex(dev); !ok {
		return nil, fmt.Errorf("%q is not a loop device path", dev)
	}
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return f, nil
}

// inspectFile reads the binding of the loop device f, opened at dev.
func inspectFile(f *os.File, dev string) (binding, bool, error) {
	info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
	switch {
	case errors.Is(err, unix.ENXIO):
		return binding{}, false, nil
	case err != nil:
		return binding{}, false, fmt.Errorf("%s: LOOP_GET_STATUS64: %w", dev, err)
	}
	raw, bound, err := readBacking(dev)
	if err != nil || !bound {
		return binding{}, false, err
	}
	path, deleted := parseBacking(raw)
	return binding{
		Backing:  path,
		Deleted:  deleted,
		File:     fileID{Dev: info.Device, Ino: info.Inode},
		ReadOnly: info.Flags&unix.LO_FLAGS_READ_ONLY != 0,
	}, true, nil
}

// sysBacking is the sysfs file naming the backing file of a loop device
// path (checked by the caller).
func sysBacking(dev string) string {
	n, _ := loopIndex(dev)
	return fmt.Sprintf("%s/loop%d/loop/backing_file", sysBlock, n)
}

// readBacking reads the backing file sysfs names for a loop device path;
// false if the device is not bound (loopsys.Backing).
func readBacking(dev string) (string, bool, error) {
	return loopsys.ReadBacking(sysBacking(dev))
}

func (kernel) backings() (map[string]string, error) {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for _, e := range entries {
		dev := "/dev/" + e.Name()
		if _, ok := loopIndex(dev); !ok {
			continue
		}
		raw, bound, err := readBacking(dev)
		if err != nil {
			return nil, err
		}
		if bound {
			out[dev] = raw
		}
	}
	return out, nil
}

// identify returns the identity of the regular file at path, never
// following a symlink.
func identify(path string) (fileID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}, err
	}
	if !fi.Mode().IsRegular() {
		return fileID{}, fmt.Errorf("%s is a %v, not a regular file", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no inode number", path)
	}
	return fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}

// lockDir takes an exclusive lock on dir/lock, held until the returned
// file is closed or the process ends.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, stateFileMode)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked", ErrInUse, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
