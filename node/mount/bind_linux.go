package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/node/layout"
)

// maxStack bounds how many mounts stacked on one target an unmount peels.
const maxStack = 8

// bind mounts with real bind mounts (mount(2) with MS_BIND). It needs
// CAP_SYS_ADMIN.
type bind struct {
	l         layout.Layout
	mountinfo string // path of the mount table
}

// NewBind returns a Mounter of real bind mounts: Stage and Publish bind the
// source onto a directory at the target; a read-only publish is remounted
// read-only (MS_REMOUNT|MS_BIND|MS_RDONLY) and writes through it fail with
// EROFS. Inspect reads /proc/self/mountinfo: Mounted means the target is a
// mount point, Partial that it exists but is not one. Unstage and Unpublish
// unmount (lazily if busy) and remove the then empty directory.
func NewBind(l layout.Layout) Mounter {
	return bind{l: l, mountinfo: "/proc/self/mountinfo"}
}

func (bind) Name() string { return "bind" }

func (b bind) Stage(source, target string) error {
	return b.mount("stage", source, target, false, false)
}

func (b bind) Publish(staged, target string, readOnly bool) error {
	return b.mount("publish", staged, target, readOnly, true)
}

func (b bind) Unstage(target string) error   { return b.unmount("unstage", target) }
func (b bind) Unpublish(target string) error { return b.unmount("unpublish", target) }

// mount binds source on target, read-only if asked. With setMode, an
// existing mount of the same source is remounted to the asked mode (this
// completes a publish interrupted between bind and read-only remount).
func (b bind) mount(op, source, target string, readOnly, setMode bool) error {
	target, err := checkTarget(b.l, op, target)
	if err != nil {
		return err
	}
	if _, err := parentsSafe(b.l, op, target); err != nil {
		return err
	}
	source, err = checkSource(op, source)
	if err != nil {
		return err
	}
	entries, top, err := b.lookup(target)
	if err != nil {
		return fmt.Errorf("mount: %s: %w", op, err)
	}
	if top != nil {
		if !sameDir(target, source) {
			shown := sourceOf(entries, top, b.avoid())
			return fmt.Errorf("mount: %s %q: shows %q, not %q: %w", op, target, shown, source, ErrConflict)
		}
		if !setMode || top.ReadOnly == readOnly {
			return nil
		}
		return remount(op, target, readOnly)
	}
	if err := b.prepare(op, target); err != nil {
		return err
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mount: %s: bind %q on %q: %w", op, source, target, err)
	}
	if !readOnly {
		return nil
	}
	if err := remount(op, target, true); err != nil {
		// Never leave a writable mount where a read-only one was asked.
		_ = unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		return err
	}
	return nil
}

// prepare makes target an empty directory to mount on: its parents are
// created, a leftover symlink is replaced, an empty directory is reused.
func (b bind) prepare(op, target string) error {
	if err := clearTarget(op, target, true); err != nil {
		return err
	}
	if err := makeParents(b.l, op, target); err != nil {
		return err
	}
	if err := os.Mkdir(target, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mount: %s: %w", op, err)
	}
	return nil
}

// remount sets the per-mount read-only flag of the bind mount at target,
// keeping its other per-mount flags (a remount that drops a locked flag
// such as nosuid fails in a user namespace).
func remount(op, target string, readOnly bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return fmt.Errorf("mount: %s: statfs %q: %w", op, target, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND)
	for stFlag, msFlag := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if st.Flags&stFlag != 0 {
			flags |= msFlag
		}
	}
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("mount: %s: remount %q (read-only %v): %w", op, target, readOnly, err)
	}
	return nil
}

func (b bind) unmount(op, target string) error {
	target, err := checkTarget(b.l, op, target)
	if err != nil {
		return err
	}
	if exist, err := parentsSafe(b.l, op, target); err != nil || !exist {
		return err
	}
	for range maxStack {
		_, top, err := b.lookup(target)
		if err != nil {
			return fmt.Errorf("mount: %s: %w", op, err)
		}
		if top == nil {
			return clearTarget(op, target, false)
		}
		err = unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
		if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: no longer a mount point
			return fmt.Errorf("mount: %s: unmount %q: %w", op, target, err)
		}
	}
	return fmt.Errorf("mount: %s: %q is still mounted after %d unmounts", op, target, maxStack)
}

func (b bind) Inspect(target string) (State, string, error) {
	target, err := checkTarget(b.l, "inspect", target)
	if err != nil {
		return Absent, "", err
	}
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return Absent, "", nil
	} else if err != nil {
		return Absent, "", fmt.Errorf("mount: inspect: %w", err)
	}
	entries, top, err := b.lookup(target)
	if err != nil {
		return Absent, "", fmt.Errorf("mount: inspect: %w", err)
	}
	if top == nil {
		return Partial, "", nil
	}
	return Mounted, sourceOf(entries, top, b.avoid()), nil
}

// lookup reads the mount table and returns it with the mount visible at
// target, if any. The target's parent is resolved first: the table shows
// mount points with symlinks resolved. A target that is itself a symlink is
// never a mount point.
func (b bind) lookup(target string) ([]mountEntry, *mountEntry, error) {
	fi, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().Type() == fs.ModeSymlink {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(target))
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(b.mountinfo)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	entries, err := parseMountinfo(f)
	if err != nil {
		return nil, nil, err
	}
	return entries, topMount(entries, filepath.Join(parent, filepath.Base(target))), nil
}

// avoid is the resolved pods directory: publishes, never a publish's source.
func (b bind) avoid() string {
	root, err := filepath.EvalSymlinks(b.l.Root())
	if err != nil {
		root = b.l.Root()
	}
	return filepath.Join(root, layout.PodsDir)
}

// probeBind bind-mounts an empty directory on another, both in a temporary
// directory under the root, and undoes it all. It creates the root if
// needed.
func probeBind(l layout.Layout) error {
	if err := os.MkdirAll(l.Root(), dirMode); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(l.Root(), ".probe-bind-")
	if err != nil {
		return err
	}
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	err = errors.Join(os.Mkdir(src, dirMode), os.Mkdir(dst, dirMode))
	if err == nil {
		err = unix.Mount(src, dst, "", unix.MS_BIND, "")
		if err == nil {
			if uerr := unix.Unmount(dst, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); uerr != nil {
				// Still mounted: removing would fail anyway; leave it, say why.
				return fmt.Errorf("mount: probe: unmount %q: %w", dst, uerr)
			}
		}
	}
	// Only empty directories: os.Remove never deletes through a mount.
	return errors.Join(err, removeErr("probe", os.Remove(dst)), removeErr("probe", os.Remove(src)), removeErr("probe", os.Remove(dir)))
}
