package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tether/tether/node/layout"
)

// CleanEmptyParents removes empty directories from dir's parent upwards,
// stopping at (never removing) stop, which must be inside the root and
// contain dir. dir itself is left alone (Unpublish removes it). It stops
// quietly at the first directory that is not empty, and refuses to go
// through anything that is not a real directory (a symlink is never
// removed or followed). Missing directories are skipped. For tidying
// pods/<uid>/volumes/<plugin> after the last unpublish.
func CleanEmptyParents(l layout.Layout, dir, stop string) error {
	dir, stop = filepath.Clean(dir), filepath.Clean(stop)
	if !l.Contains(stop) {
		return fmt.Errorf("mount: clean parents of %q: stop %q is not in the data directory %q: %w", dir, stop, l.Root(), ErrOutside)
	}
	if !below(stop, dir) || dir == stop {
		return fmt.Errorf("mount: clean parents of %q: not below %q", dir, stop)
	}
	if _, err := checkParents(l, "clean parents of", dir); err != nil {
		return err
	}
	for p := filepath.Dir(dir); p != stop; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("mount: clean parents of %q: %w", dir, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("mount: clean parents of %q: %s is not a directory (%s); left alone", dir, p, fi.Mode().Type())
		}
		err = os.Remove(p)
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
			return nil
		default:
			return fmt.Errorf("mount: clean parents of %q: %w", dir, err)
		}
	}
	return nil
}
