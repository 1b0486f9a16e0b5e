package mount

import (
	"errors"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// isMountPoint reports whether a mount is visible at path (its last
// component not followed: a symlink is never a mount point), as the mount
// table would show it, without reading the table where the kernel can
// tell:
//
//  1. statx(2) of path alone: STATX_ATTR_MOUNT_ROOT says whether path is
//     the root of the mount it resolves to. Exact (Linux 5.8 and later),
//     bind mounts of a directory of the same filesystem (same st_dev)
//     included, and a directory bound onto itself too.
//  2. Where the kernel does not report that attribute: the device of path
//     and of its parent. Different devices, or the same inode (path is a
//     root): a mount point. The same device tells nothing (a bind mount
//     of a directory of the same filesystem), so:
//  3. the mount table, read after the call began.
//
// It never answers "not mounted" for a path where the table shows a mount
// at the time of the call: step 1 answers only when the kernel reports the
// attribute, step 2 only answers "mounted", and step 3 is the table. One
// difference remains, in the safe direction for callers that would
// otherwise mount twice: a mount hidden under a later mount on a parent
// directory is listed in the table but not visible at path, and is
// reported not mounted by step 1 (mounting on path then mounts on what is
// visible). On kernels before 5.8 a btrfs subvolume reads as a mount
// point at step 2.
func isMountPoint(op *opc, path string) (bool, error) {
	root, known, err := mountRootAttr(op, path)
	if err != nil || known {
		return root, err
	}
	if root, known, err = otherDevice(op, path); err != nil || known {
		return root, err
	}
	return tableShows(op, selfTables.view(), path)
}

// mountRootAttr is step 1 of isMountPoint; known is false where the kernel
// does not report STATX_ATTR_MOUNT_ROOT (or has no statx at all).
func mountRootAttr(op *opc, path string) (root, known bool, err error) {
	var stx unix.Statx_t
	op.add(callStatx)
	err = unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &stx)
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EPERM), errors.Is(err, unix.EOPNOTSUPP):
		return false, false, nil // no statx (or a filter forbids it): ask otherwise
	case err != nil:
		return false, false, &fs.PathError{Op: "statx", Path: path, Err: err}
	case stx.Mode&unix.S_IFMT == unix.S_IFLNK:
		return false, true, nil
	case stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0:
		return false, false, nil
	}
	return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, true, nil
}

// otherDevice is step 2 of isMountPoint: known only when the answer is
// "mounted", or path is a symlink.
func otherDevice(op *opc, path string) (mounted, known bool, err error) {
	fi, err := op.lstat(path)
	if err != nil {
		return false, false, err
	}
	if fi.Mode().Type() == fs.ModeSymlink {
		return false, true, nil
	}
	pi, err := op.stat(filepath.Dir(path))
	if err != nil {
		return false, false, err
	}
	st, ok1 := fi.Sys().(*unix.Stat_t)
	ps, ok2 := pi.Sys().(*unix.Stat_t)
	if !ok1 || !ok2 {
		return false, false, nil
	}
	if st.Dev != ps.Dev || st.Ino == ps.Ino {
		return true, true, nil
	}
	return false, false, nil
}

// tableShows is step 3 of isMountPoint: whether v's table lists a mount at
// path.
func tableShows(op *opc, v *tableView, path string) (bool, error) {
	point, err := tablePoint(op, path)
	if err != nil || point == "" {
		return false, err
	}
	t, err := v.get()
	if err != nil {
		return false, err
	}
	return t.top(point) != nil, nil
}

// tablePoint is path as the mount table names it: its parent with
// symlinks resolved. It is "" for a path that is missing or a symlink,
// which is never a mount point.
func tablePoint(op *opc, path string) (string, error) {
	fi, err := op.lstat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().Type() == fs.ModeSymlink {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	parent, err := op.evalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(path)), nil
}

// evalSymlinks is filepath.EvalSymlinks, counted as an lstat per
// component (what it costs where no component is a symlink).
func (o *opc) evalSymlinks(path string) (string, error) {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		o.add(callLstat)
		if p == filepath.Dir(p) {
			break
		}
	}
	return filepath.EvalSymlinks(path)
}
