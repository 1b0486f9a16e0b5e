package chaos

import "golang.org/x/sys/unix"

// uniqueMountID returns the never-reused ID of the mount at path (Linux 6.8
// and later), or false.
func uniqueMountID(path string) (uint64, bool) {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID_UNIQUE, &st)
	if err != nil || st.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		return 0, false
	}
	return st.Mnt_id, true
}
