package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/tether/tether/node/layout"
)

// symlink mounts by symlinking the target to the source. It needs no
// privileges, so it is the mounter of unprivileged agents and of tests.
type symlink struct {
	l layout.Layout
	t *tree // nil where there is no openat2 (not Linux)
}

// NewSymlink returns a Mounter whose mount is a symlink from the target to
// the (absolute) source. Mounted means a symlink whose destination exists;
// Partial means anything else at the target: a dangling symlink, a
// directory or a file. Read-only is NOT enforced: a workload can write
// through a read-only publish. Use it where privileges are missing, or in
// tests. On Linux it holds the data directory open (see tree).
func NewSymlink(l layout.Layout) Mounter { return symlink{l: l, t: newTree(l)} }

func (symlink) Name() string { return "symlink" }

func (s symlink) Stage(source, target string) error {
	op := newOp(OpStage)
	defer op.done()
	return s.link(op, source, target, checkSource)
}

func (s symlink) Publish(staged, target string, _ bool) error {
	op := newOp(OpPublish)
	defer op.done()
	return s.link(op, staged, target, checkStaged)
}

func (s symlink) Unstage(target string) error {
	op := newOp(OpUnstage)
	defer op.done()
	return s.unlink(op, target, false)
}

func (s symlink) Unpublish(target string) error {
	op := newOp(OpUnpublish)
	defer op.done()
	return s.unlink(op, target, true)
}

// link makes target a symlink to source, checked by check.
func (s symlink) link(op *opc, source, target string, check func(*opc, string) (string, fs.FileInfo, error)) error {
	target, err := checkTarget(s.l, op, target)
	if err != nil {
		return err
	}
	if err := s.t.link(op, source, target, check); err != errNoTree {
		return err
	}
	p, err := checkParents(s.l, op, target)
	if err != nil {
		return err
	}
	source, sourceInfo, err := check(op, source)
	if err != nil {
		return err
	}
	state, shown, shows := Absent, "", fs.FileInfo(nil) // a missing parent: the target too
	if p.complete() {
		if state, shown, shows, err = s.inspect(op, target); err != nil {
			return fmt.Errorf("mount: %s: %w", op, err)
		}
	}
	switch state {
	case Mounted:
		if os.SameFile(shows, sourceInfo) {
			return nil
		}
		return fmt.Errorf("mount: %s %q: shows %q, not %q: %w", op, target, shown, source, ErrConflict)
	case Partial:
		if err := clearTarget(op, target, false); err != nil {
			return err
		}
	}
	return p.create(func() error {
		if err := op.symlink(source, target); err != nil {
			return fmt.Errorf("mount: %s: %w", op, err)
		}
		return nil
	})
}

// unlink removes the symlink at target; pod: an unpublish, which also
// removes the workload's directories once empty (see Mounter.Unpublish).
func (s symlink) unlink(op *opc, target string, pod bool) error {
	target, err := checkTarget(s.l, op, target)
	if err != nil {
		return err
	}
	if err := s.t.unlink(op, target, pod); err != errNoTree {
		return err
	}
	p, err := checkParents(s.l, op, target)
	if err != nil || !p.complete() {
		return err
	}
	if err := clearTarget(op, target, false); err != nil {
		return err
	}
	return cleanPod(s.l, op, target, pod)
}

func (s symlink) Inspect(target string) (State, string, error) {
	op := newOp(OpInspect)
	defer op.done()
	target, err := checkTarget(s.l, op, target)
	if err != nil {
		return Absent, "", err
	}
	state, source, _, err := s.inspect(op, target)
	if err != nil {
		return Absent, "", fmt.Errorf("mount: inspect: %w", err)
	}
	return state, source, nil
}

// inspect reports the state of a checked target and, when Mounted, the
// stat of the directory it shows. For a dangling symlink (Partial) the
// source is where it points. readlink tells a symlink (its destination),
// a missing target (ENOENT) and anything else (EINVAL) apart in one call,
// no lstat first: an agent's reconstruction inspects every mount.
func (symlink) inspect(op *opc, target string) (State, string, fs.FileInfo, error) {
	dest, err := op.readlink(target)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return Absent, "", nil, nil
	case errors.Is(err, syscall.EINVAL):
		return Partial, "", nil, nil // there, and not a symlink
	default:
		return Absent, "", nil, err
	}
	shows, err := op.stat(target)
	if err != nil {
		return Partial, dest, nil, nil
	}
	return Mounted, dest, shows, nil
}
