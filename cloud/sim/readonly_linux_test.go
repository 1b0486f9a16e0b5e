package sim

import (
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnlyDir makes dir unwritable for this process until t ends and
// returns the error a write there wraps. Without root, a chmod does it. As
// root, which ignores directory permissions, dir is bind-mounted on itself
// and the bind remounted read-only (keeping the per-mount flags a user
// namespace may lock); the mount is removed in t.Cleanup, before
// t.TempDir's removal. A root that cannot mount fails t, never skips it.
func readOnlyDir(t *testing.T, dir string) error {
	t.Helper()
	if os.Geteuid() != 0 {
		mustNil(t, os.Chmod(dir, 0o500))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return fs.ErrPermission
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("running as root, yet cannot bind-mount %s on itself: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("cleanup: unmount %s: %v", dir, err)
		}
	})
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for stFlag, msFlag := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if st.Flags&stFlag != 0 {
			flags |= msFlag
		}
	}
	if err := unix.Mount("", dir, "", flags, ""); err != nil {
		t.Fatalf("running as root, yet cannot remount %s read-only: %v", dir, err)
	}
	return unix.EROFS
}
