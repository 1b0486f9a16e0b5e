package loopsys

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ReadBacking reads a loop device's sysfs backing_file at path, as the
// kernel writes it (newline and " (deleted)" included); false if the
// device is not bound (Backing).
func ReadBacking(path string) (string, bool, error) {
	return Backing(os.ReadFile(path))
}

// Backing is ReadBacking's answer from a read of the file: not bound when
// the file is missing, or when the device is being unbound right then,
// which answers ENODEV or ENXIO rather than vanishing at once (loop
// devices are the machine's, and other programs release theirs at any
// time). Any other error is an error.
func Backing(raw []byte, err error) (string, bool, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENXIO):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return string(raw), true, nil
}
