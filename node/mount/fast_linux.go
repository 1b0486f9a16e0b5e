package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The mounters' operations relative to the tree's held directories. Each
// returns errNoTree where it cannot run (no openat2, no /proc, or
// legacyOnly) before touching anything; the caller then runs the
// path-by-path code.

// raced reports whether an ENOENT while making a target may come from a
// directory removed meanwhile (another volume's unpublish removing the
// workload's directories once empty): worth another attempt.
func raced(err error) bool { return !errors.Is(err, errAbsent) }

// never is a retry for operations where ENOENT is an answer.
func never(error) bool { return false }

// made runs fn in the directory that holds target, made where missing,
// with target's name there: stage's and publish's walk. An ENOENT (a
// directory removed meanwhile by another volume's unpublish) makes run
// try again.
func (t *tree) made(op *opc, target string, fn func(a at, name string) error) error {
	s := t.spotOf(target)
	return t.run(op, s.base, true, raced, func(basefd int) error {
		a, err := makeDirs(op, basefd, s.sub)
		if err != nil {
			return err
		}
		defer a.close(op)
		return fn(a, s.name)
	})
}

// link is the symlink mounter's stage and publish: target a symlink to
// source (checked by check). Costs, where the directories exist: the
// source's check (an lstat or a stat), the symlinkat; a new workload's
// directories a mkdirat each. Where the target exists (a repeat), a
// readlinkat and a stat tell whether it shows source already.
func (t *tree) link(op *opc, source, target string, check func(*opc, string) (string, fs.FileInfo, error)) error {
	if !t.on() {
		return errNoTree
	}
	source, sourceInfo, err := check(op, source)
	if err != nil {
		return err
	}
	return t.made(op, target, func(a at, name string) error {
		for range 2 {
			op.add(callSymlink)
			err := retryEINTR(func() error { return unix.Symlinkat(source, a.fd, a.path(name)) })
			if err != unix.EEXIST {
				return symlinkErr(op, err)
			}
			state, shown, shows := inspectAt(op, a, name)
			switch state {
			case Mounted:
				if os.SameFile(shows, sourceInfo) {
					return nil
				}
				return fmt.Errorf("mount: %s %q: shows %q, not %q: %w", op, target, shown, source, ErrConflict)
			case Partial:
				if err := clearAt(op, a, name, target, false); err != nil && !errors.Is(err, unix.ENOENT) {
					return err
				}
			}
		}
		return fmt.Errorf("mount: %s %q: replaced meanwhile", op, target)
	})
}

func symlinkErr(op *opc, err error) error {
	if err == nil || err == unix.ENOENT {
		return err // ENOENT: run asks again
	}
	return fmt.Errorf("mount: %s: %w", op, err)
}

// inspectAt is the symlink mounter's inspect of name below a: a
// readlinkat (and a stat when it is a symlink), as symlink.inspect.
func inspectAt(op *opc, a at, name string) (State, string, fs.FileInfo) {
	buf := make([]byte, 4096)
	op.add(callReadlink)
	n, err := unix.Readlinkat(a.fd, a.path(name), buf)
	switch {
	case err == unix.ENOENT:
		return Absent, "", nil
	case err != nil:
		return Partial, "", nil // there, and not a symlink (EINVAL)
	}
	dest := string(buf[:n])
	op.add(callStat)
	shows, err := os.Stat(fdPath(a, name))
	if err != nil {
		return Partial, dest, nil
	}
	return Mounted, dest, shows
}

// unlink is the symlink mounter's unstage and unpublish: an lstat and
// an unlinkat; an unpublish also opens (openat2) and closes the
// workload's directory, and removes the workload's directories once
// empty (removePod). An unstage, in a held mounts/, costs just the two.
func (t *tree) unlink(op *opc, target string, pod bool) error {
	return t.remove(op, target, pod, func(op *opc, a at, name, target string) error {
		return clearAt(op, a, name, target, false)
	})
}

// remove is unlink's and unmount's walk: rm takes name away below the
// workload's directory (opened, never made), then an unpublish (pod)
// removes the workload's directories once empty. A target already gone
// is no error.
func (t *tree) remove(op *opc, target string, pod bool, rm func(op *opc, a at, name, target string) error) error {
	if !t.on() {
		return errNoTree
	}
	s := t.spotOf(target)
	err := t.run(op, s.base, false, never, func(basefd int) error {
		a, err := openDir(op, basefd, s.sub)
		if errors.Is(err, fs.ErrNotExist) {
			return errAbsent
		}
		if err != nil {
			return err
		}
		defer a.close(op)
		err = rm(op, a, s.name, target)
		if err == unix.ENOENT {
			if !a.own {
				return errAbsent // in a held directory: run makes sure it is linked in
			}
			err = nil // absent: the workload's directories may be left, below
		}
		if err == nil && pod && s.podDirs() {
			err = removePod(op, basefd, s.sub)
		}
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// mount is the bind mounter's stage and publish: source bound on target,
// a directory made for it. Costs, where the directories exist: the
// source's lstat, the target's mkdirat and the mount(2) (a read-only
// publish a statfs and a remount more); a new workload's directories a
// mkdirat each. Where the target exists (a repeat, or what an interrupted
// operation left), it is looked at as the path-by-path code does.
func (t *tree) mount(op *opc, b bind, source, target string, readOnly, setMode bool) error {
	if !t.on() {
		return errNoTree
	}
	source, sourceInfo, err := checkSource(op, source)
	if err != nil {
		return err
	}
	return t.made(op, target, func(a at, name string) error {
		p := fdPath(a, name)
		switch err := mkdirat(op, a.fd, a.path(name)); err {
		case nil:
		case unix.EEXIST:
			done, err := b.existing(op, a, name, target, source, sourceInfo, readOnly, setMode)
			if done || err != nil {
				return err
			}
		default:
			return &fs.PathError{Op: "mkdirat", Path: target, Err: err} // ENOENT: run asks again
		}
		return bindOn(op, source, p, target, readOnly)
	})
}

// existing handles a target mount finds there: done when it shows source
// already (its mode set when setMode), ErrConflict when it shows another;
// otherwise what an interrupted operation left is cleared (a symlink
// replaced, an empty directory kept) for the mount.
func (b bind) existing(op *opc, a at, name, target, source string, sourceInfo fs.FileInfo, readOnly, setMode bool) (bool, error) {
	p := fdPath(a, name)
	mounted, err := isMountPoint(op, p)
	if err != nil {
		return true, err // ENOENT: run asks again
	}
	if mounted {
		if !showsDir(op, p, sourceInfo) {
			shown, _, _ := sourceAt(op, target, selfTables.view(), b.avoid())
			return true, fmt.Errorf("mount: %s %q: shows %q, not %q: %w", op, target, shown, source, ErrConflict)
		}
		if !setMode {
			return true, nil
		}
		return true, setReadOnly(op, p, readOnly)
	}
	if err := clearAt(op, a, name, target, true); err != nil {
		return true, err
	}
	if err := mkdirat(op, a.fd, a.path(name)); err != nil && err != unix.EEXIST {
		return true, &fs.PathError{Op: "mkdirat", Path: target, Err: err}
	}
	return false, nil
}

// bindOn binds source on the directory p (target in errors), read-only if
// asked: never left writable where read-only was asked.
func bindOn(op *opc, source, p, target string, readOnly bool) error {
	op.add(callMount)
	if err := unix.Mount(source, p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mount: %s: bind %q on %q: %w", op, source, target, err)
	}
	if !readOnly {
		return nil
	}
	if err := remount(op, p, true); err != nil {
		op.add(callUmount)
		_ = unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		return err
	}
	return nil
}

// unmount is the bind mounter's unstage and unpublish: umount2 (lazily
// if busy) until nothing is mounted, then rmdir. An unstage in a held
// mounts/ costs the two; an unpublish also opens (openat2) and closes the
// workload's directory, and removes the workload's directories once
// empty (removePod).
func (t *tree) unmount(op *opc, target string, pod bool) error {
	return t.remove(op, target, pod, unmountAt)
}

// unmountAt unmounts every mount stacked on name below a (up to
// maxStack) and removes the then empty directory: an rmdir that fails
// with EBUSY finds another mount there. A target that is not a mount
// point (EINVAL) is cleared as clearTarget does. ENOENT is returned as
// is.
func unmountAt(op *opc, a at, name, target string) error {
	p := fdPath(a, name)
	for range maxStack {
		op.add(callUmount)
		err := retryEINTR(func() error { return unix.Unmount(p, unix.UMOUNT_NOFOLLOW) })
		if err == unix.EBUSY {
			op.add(callUmount)
			err = retryEINTR(func() error { return unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW) })
		}
		switch err {
		case nil:
		case unix.EINVAL: // not a mount point, or not a directory
			return clearAt(op, a, name, target, false)
		case unix.ENOENT:
			return err
		default:
			return fmt.Errorf("mount: %s: unmount %q: %w", op, target, err)
		}
		switch err := rmdirAt(op, a.fd, a.path(name)); err {
		case nil, unix.ENOENT:
			return nil
		case unix.EBUSY: // another mount stacked there
		case unix.ENOTEMPTY, unix.EEXIST:
			return notEmpty(op, target)
		default:
			return fmt.Errorf("mount: %s: %w", op, &fs.PathError{Op: "remove", Path: target, Err: err})
		}
	}
	return fmt.Errorf("mount: %s: %q is still mounted after %d unmounts", op, target, maxStack)
}
