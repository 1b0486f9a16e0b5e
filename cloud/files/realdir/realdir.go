package realdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafe is wrapped by every refusal for a symlink, a file that is not
// a directory, or a path outside its root. A missing path is not unsafe:
// its error wraps fs.ErrNotExist.
var ErrUnsafe = errors.New("not a real directory in its root")

// Check checks, without following it, that path is a directory.
func Check(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode().Type() == fs.ModeSymlink:
		to, _ := os.Readlink(path)
		return fmt.Errorf("%q is a symlink (to %q), which is never followed: %w", path, to, ErrUnsafe)
	case !fi.IsDir():
		return fmt.Errorf("%q is a %v, not a directory: %w", path, fi.Mode().Type(), ErrUnsafe)
	}
	return nil
}

// In checks that path is strictly below root by its names (no ".." climbs
// out of root on the way) and that root, path and every directory between
// them are real directories (Check): so that, with the symlinks above root
// resolved, path is still where it says, in root. Every refusal names the
// offending path.
//
// That last promise needs no resolving of its own. Clean, path is root
// followed by names that are not "..", so the kernel reaches path through
// the very directory it reaches root through, whatever symlinks lie above
// root, and then through entries that Check found to be directories, not
// symlinks. Resolving both paths (filepath.EvalSymlinks, one lstat per
// component of each, above root too) could only find path at root's
// resolution joined with the names below it. In costs one lstat per
// directory from path up to root.
func In(root, path string) error {
	if root == "" {
		return fmt.Errorf("%q: no root to check it against: %w", path, ErrUnsafe)
	}
	root, path = filepath.Clean(root), filepath.Clean(path)
	if !below(root, path) {
		return fmt.Errorf("%q is not below %q: %w", path, root, ErrUnsafe)
	}
	for p := path; ; p = filepath.Dir(p) {
		if err := Check(p); err != nil {
			return err
		}
		if p == root {
			return nil
		}
	}
}

// below reports whether the clean path is strictly below the clean root by
// its names: root, a separator, then names none of which is "..". In a
// clean path ".." can only lead a relative path, so below a root that is
// not all ".." there is none; below one that is, a leading ".." climbs out.
func below(root, path string) bool {
	sep := string(filepath.Separator)
	if !strings.HasPrefix(path, root+sep) {
		return false
	}
	rel := path[len(root)+1:]
	return rel != ".." && !strings.HasPrefix(rel, ".."+sep)
}
