package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrUnsafeSource: a mount's source is a symlink, or is not a real
// directory inside the directory it must be in (CheckSourceIn). Nothing was
// mounted. A bind mount follows every symlink in its source, so a symlink
// planted where content is expected would show what it points to (/etc,
// say) to a workload.
var ErrUnsafeSource = errors.New("mount: source is a symlink or outside its root")

// CheckSourceIn checks a source before it is mounted: it must be strictly
// below root; root, the source and every directory between them must be
// real directories, not symlinks; and with the symlinks above root
// resolved, the source must still be where its path says, in root. Every
// refusal wraps ErrUnsafeSource and names the offending path.
func CheckSourceIn(root, source string) error {
	if root == "" {
		return fmt.Errorf("mount: source %q: no directory to check it against: %w", source, ErrUnsafeSource)
	}
	root, source = filepath.Clean(root), filepath.Clean(source)
	rel, err := filepath.Rel(root, source)
	if err != nil || !below(root, source) || source == root {
		return fmt.Errorf("mount: source %q is not below %q: %w", source, root, ErrUnsafeSource)
	}
	for p := source; ; p = filepath.Dir(p) {
		if err := realDir(p); err != nil {
			return fmt.Errorf("mount: source %q: %w", source, err)
		}
		if p == root {
			break
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("mount: source %q: %w", source, err)
	}
	real, err := filepath.EvalSymlinks(source)
	if err != nil {
		return fmt.Errorf("mount: source %q: %w", source, err)
	}
	if want := filepath.Join(realRoot, rel); real != want {
		return fmt.Errorf("mount: source %q resolves to %q, not %q in %q: %w", source, real, want, realRoot, ErrUnsafeSource)
	}
	return nil
}

// realDir checks, without following it, that path is a directory; a
// symlink or another kind of file is ErrUnsafeSource.
func realDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode().Type() == fs.ModeSymlink:
		to, _ := os.Readlink(path)
		return fmt.Errorf("%q is a symlink (to %q), which a mount source never goes through: %w", path, to, ErrUnsafeSource)
	case !fi.IsDir():
		return fmt.Errorf("%q is a %v, not a directory: %w", path, fi.Mode().Type(), ErrUnsafeSource)
	}
	return nil
}
