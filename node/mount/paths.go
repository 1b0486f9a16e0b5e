package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tether/tether/node/layout"
)

// dirMode is the mode of every directory this package creates.
const dirMode = 0o750

// checkTarget returns target cleaned if it is strictly below the root,
// ErrOutside otherwise. It only looks at the string.
func checkTarget(l layout.Layout, op fmt.Stringer, target string) (string, error) {
	clean := filepath.Clean(target)
	if !l.Contains(clean) || clean == l.Root() {
		return "", fmt.Errorf("mount: %s %q: not below the data directory %q: %w", op, target, l.Root(), ErrOutside)
	}
	return clean, nil
}

// checkSource returns source made absolute if it is a directory and not a
// symlink (ErrUnsafeSource), and its stat.
func checkSource(op *opc, source string) (string, fs.FileInfo, error) {
	// A real directory, the usual source, needs one lstat: not a symlink,
	// its lstat is its stat. Anything else is refused as the checks
	// below refuse it.
	if abs, err := filepath.Abs(source); source != "" && err == nil {
		if fi, err := op.lstat(abs); err == nil && fi.IsDir() {
			return abs, fi, nil
		}
	}
	abs, fi, err := checkStaged(op, source)
	if err != nil {
		return "", nil, err
	}
	if err := realDir(abs); err != nil {
		return "", nil, fmt.Errorf("mount: %s: source: %w", op, err)
	}
	return abs, fi, nil
}

// checkStaged is checkSource for the symlink mounter's publish, whose
// source is its own stage: a symlink. It follows it.
func checkStaged(op *opc, source string) (string, fs.FileInfo, error) {
	if source == "" {
		return "", nil, fmt.Errorf("mount: %s: empty source", op)
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return "", nil, fmt.Errorf("mount: %s: source %q: %w", op, source, err)
	}
	fi, err := op.stat(abs)
	if err != nil {
		return "", nil, fmt.Errorf("mount: %s: source: %w", op, err)
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("mount: %s: source %q is not a directory", op, abs)
	}
	return abs, fi, nil
}

// between returns the paths strictly between the root and path (which must
// be clean and below the root), shallowest first: path's own prefixes up
// to each separator below the root, so no string is built for them.
func between(l layout.Layout, path string) []string {
	root := l.Root()
	if len(path) <= len(root) || path[len(root)] != filepath.Separator || !strings.HasPrefix(path, root) {
		return nil
	}
	out := make([]string, 0, strings.Count(path[len(root)+1:], string(filepath.Separator)))
	for i := len(root) + 1; i < len(path); i++ {
		if path[i] == filepath.Separator {
			out = append(out, path[:i])
		}
	}
	return out
}

// parents is what checkParents found of the directories between the root
// and a target (between), shallowest first: the first n exist and are real
// directories; the others are missing (a missing directory has no
// subdirectories).
type parents struct {
	l      layout.Layout
	op     *opc
	target string
	dirs   []string
	n      int
}

// checkParents checks that every existing directory between the root and
// target is a real directory, not a symlink (ErrOutside), so that an
// operation on target cannot land outside the root. It stops at the first
// missing one. Where the deepest is reached from / through no symlink at
// all (realDirs: one openat2 and a close), they all are; otherwise one
// lstat per directory, the missing one included.
func checkParents(l layout.Layout, op *opc, target string) (parents, error) {
	p := parents{l: l, op: op, target: target, dirs: between(l, target)}
	if len(p.dirs) > 0 && realDirs(op, p.dirs[len(p.dirs)-1]) {
		p.n = len(p.dirs)
		return p, nil
	}
	for _, dir := range p.dirs {
		fi, err := op.lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return p, fmt.Errorf("mount: %s %q: %w", op, target, err)
		}
		if !fi.IsDir() {
			return p, fmt.Errorf("mount: %s %q: %s is not a directory (%s): %w", op, target, dir, fi.Mode().Type(), ErrOutside)
		}
		p.n++
	}
	return p, nil
}

// complete reports whether every directory between the root and the
// target exists: otherwise the target cannot.
func (p parents) complete() bool { return p.n == len(p.dirs) }

// make creates the directories checkParents found missing, one at a
// time, from the first of them on; the root too (mkdirAll) when that
// first one is right below it. One that was there already (made meanwhile
// by an operation on another target) is looked at: it must be a real
// directory (ErrOutside). One this mkdir made is a real directory: looking
// again would prove nothing more (it could be swapped right after the look
// as well) and cost an lstat per new directory, three for each new pod's
// volume.
func (p parents) make() error {
	if p.n == 0 {
		if err := p.op.mkdirAll(p.l.Root()); err != nil {
			return fmt.Errorf("mount: %s %q: %w", p.op, p.target, err)
		}
	}
	for _, dir := range p.dirs[p.n:] {
		err := p.op.mkdir(dir)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("mount: %s %q: %w", p.op, p.target, err)
		}
		fi, err := p.op.lstat(dir)
		if err != nil {
			return fmt.Errorf("mount: %s %q: %w", p.op, p.target, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("mount: %s %q: %s is not a directory (%s): %w", p.op, p.target, dir, fi.Mode().Type(), ErrOutside)
		}
	}
	return nil
}

// create makes the missing parents (make), then the target itself with
// mk. Parents found by checkParents may be gone by then: another
// volume's Unpublish (or CleanEmptyParents) removes a workload's
// directories once empty. Where making a parent or the target finds one
// missing (ENOENT), the parents are walked again from the root, checked
// and made, and mk is run once more, up to attempts times in all.
func (p parents) create(mk func() error) error {
	err := p.make()
	if err == nil {
		err = mk()
	}
	for range attempts - 1 {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if p, err = checkParents(p.l, p.op, p.target); err != nil {
			return err
		}
		if err = p.make(); err == nil {
			err = mk()
		}
	}
	return err
}

// makeParents creates the root and the directories between it and target,
// refusing any existing component that is not a real directory: one walk,
// checking the directories that exist and making the others.
func makeParents(l layout.Layout, op *opc, target string) error {
	p, err := checkParents(l, op, target)
	if err != nil {
		return err
	}
	return p.make()
}

// clearTarget removes what an interrupted operation left at target: a
// symlink, or an empty directory (kept when keepDir, for use as a mount
// point). Anything else is refused: a directory with data (ErrNotEmpty) or
// another kind of file. The target must not be a mount.
func clearTarget(op *opc, target string, keepDir bool) error {
	fi, err := op.lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("mount: %s: %w", op, err)
	case fi.Mode().Type() == fs.ModeSymlink:
		return removeErr(op, op.unlink(target))
	case !fi.IsDir():
		return fmt.Errorf("mount: %s: %q is a %s, not a directory; left alone", op, target, fi.Mode().Type())
	}
	if !keepDir {
		// rmdir(2) removes only an empty directory: no need to look first.
		err := op.rmdir(target)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return notEmpty(op, target)
		}
		return removeErr(op, err)
	}
	empty, err := op.emptyDir(target)
	if err != nil {
		return fmt.Errorf("mount: %s: %w", op, err)
	}
	if !empty {
		return notEmpty(op, target)
	}
	return nil
}

func notEmpty(op fmt.Stringer, target string) error {
	return fmt.Errorf("mount: %s: %q is not a mount and is not empty; left alone: %w", op, target, ErrNotEmpty)
}

func removeErr(op fmt.Stringer, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("mount: %s: %w", op, err)
}

// below reports whether path is parent or below it; both must be clean.
func below(parent, path string) bool {
	return path == parent || strings.HasPrefix(path, parent+string(filepath.Separator))
}

// showsDir reports whether target (following symlinks) is the directory
// whose stat is dir: the test for "target already shows source".
func showsDir(op *opc, target string, dir fs.FileInfo) bool {
	fi, err := op.stat(target)
	return err == nil && os.SameFile(fi, dir)
}

// MakeParents creates the data directory and every directory between it
// and target (not target itself), refusing (ErrOutside) a target that is
// not strictly below the root and any existing component that is not a
// real directory: what a mounter that hands its targets to someone else
// (a CSI node plugin) does before it asks.
func MakeParents(l layout.Layout, target string) error {
	op := newOp(OpPrepare)
	defer op.done()
	clean, err := checkTarget(l, op, target)
	if err != nil {
		return err
	}
	return makeParents(l, op, clean)
}
