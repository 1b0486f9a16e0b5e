package mount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// requireBind skips t only when this process is not root. As root, bind
// mounts must work: a probe that fails (EPERM in an unprivileged container,
// or anything else) fails t with the reason, never skips it.
func requireBind(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root (euid is not 0)")
	}
	if ok, why := canBind(t); !ok {
		t.Fatalf("running as root, yet %s", why)
	}
}

// canBind reports whether this process can bind-mount, and if not why: it
// must be root and a probe mount(2) must not fail with EPERM (as in an
// unprivileged container). Any other probe failure fails the test. Only
// TestDefault, which checks that Default picks what the environment
// allows, may treat "cannot" as an answer; privileged tests use
// requireBind.
func canBind(t *testing.T) (bool, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return false, "bind mounts need root (euid is not 0)"
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	mkdir(t, src)
	mkdir(t, dst)
	err := unix.Mount(src, dst, "", unix.MS_BIND, "")
	if errors.Is(err, unix.EPERM) {
		return false, fmt.Sprintf("bind mounts are not permitted here: mount(2): %v", err)
	}
	must(t, err)
	must(t, unix.Unmount(dst, unix.MNT_DETACH))
	return true, ""
}

// unmountUnder detaches every mount at or below dir, deepest first, so
// that removing dir never reaches through a mount.
func unmountUnder(t testing.TB, dir string) {
	t.Helper()
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return // dir is gone: nothing can be mounted under it
	}
	for range maxStack {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		tab, err := parseMountinfo(f)
		f.Close()
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		var points []string
		for _, e := range tab.entries {
			if below(resolved, e.Point) {
				points = append(points, e.Point)
			}
		}
		if len(points) == 0 {
			return
		}
		slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, p := range points {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				t.Errorf("cleanup: unmount %s: %v", p, err)
			}
		}
	}
	t.Errorf("cleanup: mounts remain under %s", dir)
}
