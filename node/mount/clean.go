package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tether/tether/node/layout"
)

// CleanEmptyParents removes empty directories from dir's parent upwards,
// stopping at (never removing) stop, which must be inside the root and
// contain dir. dir itself is left alone (Unpublish removes it). It stops
// quietly at the first directory that is not empty, and refuses to go
// through anything that is not a real directory (a symlink is never
// removed or followed). Missing directories are skipped. For mounters
// whose Unpublish leaves the workload's directories to their caller (a
// CSI plugin's), and for tests; the symlink, bind and block mounters'
// Unpublish remove them itself.
func CleanEmptyParents(l layout.Layout, dir, stop string) error {
	op := newOpNamed(OpClean, "clean parents of")
	defer op.done()
	return cleanEmptyParents(l, op, dir, stop)
}

func cleanEmptyParents(l layout.Layout, op *opc, dir, stop string) error {
	dir, stop = filepath.Clean(dir), filepath.Clean(stop)
	if !l.Contains(stop) {
		return fmt.Errorf("mount: clean parents of %q: stop %q is not in the data directory %q: %w", dir, stop, l.Root(), ErrOutside)
	}
	if !below(stop, dir) || dir == stop {
		return fmt.Errorf("mount: clean parents of %q: not below %q", dir, stop)
	}
	p, err := checkParents(l, op, dir)
	if err != nil {
		return err
	}
	// p.dirs ends with dir's parent, each found a real directory or
	// missing (from p.n on); stop is the root or one of them.
	for i := len(p.dirs) - 1; i >= 0 && p.dirs[i] != stop; i-- {
		if i >= p.n {
			continue
		}
		err := op.rmdir(p.dirs[i])
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

// cleanPod is the path-by-path code's removal of a workload's
// directories after an unpublish (pod) of a target of the layout's shape
// pods/<uid>/volumes/<plugin>/<volume>: CleanEmptyParents up to pods/,
// which is kept.
func cleanPod(l layout.Layout, op *opc, target string, pod bool) error {
	pods := filepath.Join(l.Root(), layout.PodsDir)
	if !pod || !below(pods, target) || strings.Count(target[len(pods):], string(filepath.Separator)) != 4 ||
		filepath.Base(filepath.Dir(filepath.Dir(target))) != layout.VolumesDir {
		return nil
	}
	return cleanEmptyParents(l, op, target, pods)
}
