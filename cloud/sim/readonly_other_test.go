//go:build !linux

package sim

import (
	"io/fs"
	"os"
	"testing"
)

// readOnlyDir makes dir unwritable for this process until t ends (a chmod)
// and returns the error a write there wraps. Root ignores directory
// permissions, and read-only bind mounts are Linux only: as root t is
// skipped, saying so.
func readOnlyDir(t *testing.T, dir string) error {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("as root, a read-only directory needs a read-only bind mount: Linux only")
	}
	mustNil(t, os.Chmod(dir, 0o500))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	return fs.ErrPermission
}
