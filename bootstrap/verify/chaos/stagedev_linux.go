package chaos

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// showsSource reports whether the mount at path shows src: the block
// device src itself mounted (its filesystem's device is src's), or the
// directory src (a bind mount or symlink of it: the same inode), and what
// it shows.
func showsSource(path, src string) (bool, string, error) {
	var at, want unix.Stat_t
	if err := unix.Stat(path, &at); err != nil {
		return false, "", err
	}
	if err := unix.Stat(src, &want); err != nil {
		return false, "", err
	}
	shows := fmt.Sprintf("device %d:%d inode %d", unix.Major(at.Dev), unix.Minor(at.Dev), at.Ino)
	if want.Mode&unix.S_IFMT == unix.S_IFBLK {
		return at.Dev == want.Rdev, fmt.Sprintf("device %d:%d", unix.Major(at.Dev), unix.Minor(at.Dev)), nil
	}
	return at.Dev == want.Dev && at.Ino == want.Ino, shows, nil
}
