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
	l layout.Layout
	t *tree
}

// NewBind returns a Mounter of real bind mounts: Stage and Publish bind the
// source onto a directory at the target; a read-only publish is remounted
// read-only (MS_REMOUNT|MS_BIND|MS_RDONLY) and writes through it fail with
// EROFS. Whether a target is mounted is asked of the kernel about the
// target alone (isMountPoint), never by reading the whole mount table,
// where the kernel can tell (Linux 5.8 and later): Mounted means the target
// is a mount point, Partial that it exists but is not one. Inspect of a
// mounted target reads /proc/self/mountinfo to name its source (one read
// per Scan, shared by the agents that scan at the same time). Unstage and
// Unpublish unmount (lazily if busy) and remove the then empty directory.
// It holds the data directory open (see tree) and mounts through
// /proc/self/fd.
func NewBind(l layout.Layout) Mounter {
	return bind{l: l, t: newTree(l)}
}

func (bind) Name() string { return "bind" }

func (b bind) Stage(source, target string) error {
	op := newOp(OpStage)
	defer op.done()
	return b.mount(op, source, target, false, false)
}

func (b bind) Publish(staged, target string, readOnly bool) error {
	op := newOp(OpPublish)
	defer op.done()
	return b.mount(op, staged, target, readOnly, true)
}

func (b bind) Unstage(target string) error {
	op := newOp(OpUnstage)
	defer op.done()
	return b.unmount(op, target, false)
}

func (b bind) Unpublish(target string) error {
	op := newOp(OpUnpublish)
	defer op.done()
	return b.unmount(op, target, true)
}

// mount binds source on target, read-only if asked. With setMode, an
// existing mount of the same source is remounted to the asked mode (this
// completes a publish interrupted between bind and read-only remount).
func (b bind) mount(op *opc, source, target string, readOnly, setMode bool) error {
	target, err := checkTarget(b.l, op, target)
	if err != nil {
		return err
	}
	if err := b.t.mount(op, b, source, target, readOnly, setMode); err != errNoTree {
		return err
	}
	p, err := checkParents(b.l, op, target)
	if err != nil {
		return err
	}
	source, sourceInfo, err := checkSource(op, source)
	if err != nil {
		return err
	}
	mounted, absent, err := targetState(op, p, target)
	if err != nil {
		return fmt.Errorf("mount: %s: %w", op, err)
	}
	if mounted {
		if !showsDir(op, target, sourceInfo) {
			shown, _, _ := sourceAt(op, target, selfTables.view(), b.avoid())
			return fmt.Errorf("mount: %s %q: shows %q, not %q: %w", op, target, shown, source, ErrConflict)
		}
		if !setMode {
			return nil
		}
		return setReadOnly(op, target, readOnly)
	}
	if err := b.prepare(op, target, p, absent); err != nil {
		return err
	}
	return bindOn(op, source, target, target, readOnly)
}

// targetState asks the kernel whether target is a mount point (and says
// whether it is missing), unless one of its parents is missing (p, as
// checkParents found them): then so is the target.
func targetState(op *opc, p parents, target string) (mounted, absent bool, err error) {
	if !p.complete() {
		return false, true, nil
	}
	mounted, err = isMountPoint(op, target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, true, nil
	}
	return mounted, false, err
}

// prepare makes target an empty directory to mount on: its missing
// parents (p, as checkParents found them) are created, a leftover symlink
// is replaced, an empty directory is reused. A target found absent is
// not looked at again.
func (bind) prepare(op *opc, target string, p parents, absent bool) error {
	if !absent {
		if err := clearTarget(op, target, true); err != nil {
			return err
		}
	}
	return p.create(func() error {
		if err := op.mkdir(target); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("mount: %s: %w", op, err)
		}
		return nil
	})
}

// setReadOnly makes the mount at target read-only or writable as asked. A
// writable mount (statfs without ST_RDONLY) asked to stay writable is left
// alone. Otherwise it is remounted: statfs reports read-only for a
// read-only mount or filesystem alike, and only the mount table tells the
// per-mount flag apart; a remount to the mode asked is idempotent and
// costs one system call, the table a read of every mount.
func setReadOnly(op *opc, target string, readOnly bool) error {
	st, err := statfs(op, target)
	if err != nil {
		return err
	}
	if st.Flags&unix.ST_RDONLY == 0 && !readOnly {
		return nil
	}
	return remountFrom(op, target, st, readOnly)
}

// remount sets the per-mount read-only flag of the bind mount at target,
// keeping its other per-mount flags (a remount that drops a locked flag
// such as nosuid fails in a user namespace).
func remount(op *opc, target string, readOnly bool) error {
	st, err := statfs(op, target)
	if err != nil {
		return err
	}
	return remountFrom(op, target, st, readOnly)
}

func statfs(op *opc, target string) (*unix.Statfs_t, error) {
	var st unix.Statfs_t
	op.add(callStatfs)
	if err := unix.Statfs(target, &st); err != nil {
		return nil, fmt.Errorf("mount: %s: statfs %q: %w", op, target, err)
	}
	return &st, nil
}

// remountFrom is remount with the flags of target's statfs, st.
func remountFrom(op *opc, target string, st *unix.Statfs_t, readOnly bool) error {
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
	op.add(callMount)
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("mount: %s: remount %q (read-only %v): %w", op, target, readOnly, err)
	}
	return nil
}

// unmount unmounts target; pod: an unpublish, which also removes the
// workload's directories once empty (see Mounter.Unpublish).
func (b bind) unmount(op *opc, target string, pod bool) error {
	clean, err := checkTarget(b.l, op, target)
	if err != nil {
		return err
	}
	if err := b.t.unmount(op, clean, pod); err != errNoTree {
		return err
	}
	if err := unmountAll(b.l, op, target, true); err != nil {
		return err
	}
	return cleanPod(b.l, op, clean, pod)
}

// unmountAll unmounts every mount stacked on target (up to maxStack) and
// removes the then empty directory. A busy mount is detached lazily when
// lazy (the bind mounter), and otherwise left mounted with an error that
// wraps ErrBusy and EBUSY (the block mounter: a filesystem must never stay
// mounted where nobody can see it).
func unmountAll(l layout.Layout, op *opc, target string, lazy bool) error {
	target, err := checkTarget(l, op, target)
	if err != nil {
		return err
	}
	if p, err := checkParents(l, op, target); err != nil || !p.complete() {
		return err
	}
	for range maxStack {
		mounted, err := isMountPoint(op, target)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mount: %s: %w", op, err)
		}
		if !mounted {
			return clearTarget(op, target, false)
		}
		op.add(callUmount)
		err = unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		if errors.Is(err, unix.EBUSY) {
			if !lazy {
				return fmt.Errorf("mount: %s: unmount %q: %w: %w", op, target, ErrBusy, err)
			}
			op.add(callUmount)
			err = unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
		if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: no longer a mount point
			return fmt.Errorf("mount: %s: unmount %q: %w", op, target, err)
		}
	}
	return fmt.Errorf("mount: %s: %q is still mounted after %d unmounts", op, target, maxStack)
}

func (b bind) Inspect(target string) (State, string, error) {
	op := newOp(OpInspect)
	defer op.done()
	return b.inspect(op, target, nil, "")
}

// inspector returns Inspect sharing one table, read after this call, among
// all its calls: Scan's, which reads the table once however many targets
// it inspects.
func (b bind) inspector() func(string) (State, string, error) {
	v, avoid := selfTables.view(), b.avoid()
	return func(target string) (State, string, error) {
		op := newOp(OpInspect)
		defer op.done()
		return b.inspect(op, target, v, avoid)
	}
}

// inspect is Inspect naming the source from shared's table (nil: a table
// read after this call began), avoiding avoid ("": b.avoid()). The state
// comes from isMountPoint; only a mounted target needs the table.
func (b bind) inspect(op *opc, target string, shared *tableView, avoid string) (State, string, error) {
	target, err := checkTarget(b.l, op, target)
	if err != nil {
		return Absent, "", err
	}
	fresh := selfTables.view() // asked before the check; read only if needed
	if shared == nil {
		shared = fresh
	}
	if st, done, err := unmountedState(op, target); done {
		return st, "", err
	}
	if avoid == "" {
		avoid = b.avoid()
	}
	source, listed, err := sourceAt(op, target, shared, avoid)
	if err == nil && !listed && shared != fresh {
		// The shared table may be older than the mount: ask a newer one.
		source, listed, err = sourceAt(op, target, fresh, avoid)
	}
	if err != nil {
		return Absent, "", fmt.Errorf("mount: inspect: %w", err)
	}
	if !listed {
		// The kernel said mounted, a table read after that does not list
		// it: unmounted meanwhile, or listed under another name (then the
		// source is unknown, but never reported unmounted).
		if st, done, err := unmountedState(op, target); done {
			return st, "", err
		}
	}
	return Mounted, source, nil
}

// unmountedState asks the kernel whether target is a mount point: done
// with Absent (missing), Partial (a path, not mounted) or an error; not
// done when it is mounted.
func unmountedState(op *opc, target string) (st State, done bool, err error) {
	mounted, err := isMountPoint(op, target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Absent, true, nil
	case err != nil:
		return Absent, true, fmt.Errorf("mount: inspect: %w", err)
	case !mounted:
		return Partial, true, nil
	}
	return Mounted, false, nil
}

// sourceAt names the source of the mount at target from v's table (see
// table.sourceOf), and whether the table lists a mount there at all.
func sourceAt(op *opc, target string, v *tableView, avoid string) (string, bool, error) {
	point, err := tablePoint(op, target)
	if err != nil || point == "" {
		return "", false, err
	}
	t, err := v.get()
	if err != nil {
		return "", false, err
	}
	top := t.top(point)
	if top == nil {
		return "", false, nil
	}
	return t.sourceOf(top, avoid), true, nil
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
	return errors.Join(err, removeErr(opName("probe"), os.Remove(dst)), removeErr(opName("probe"), os.Remove(src)), removeErr(opName("probe"), os.Remove(dir)))
}

// opName is an op string where no operation is counted (a probe).
type opName string

func (n opName) String() string { return string(n) }
