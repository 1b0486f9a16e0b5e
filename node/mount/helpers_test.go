package mount

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/node/layout"
)

// env is a test's filesystem: base (a t.TempDir) holds the data directory
// root, content directories (src, src2) and whatever a test puts outside
// the root.
type env struct {
	base string
	l    layout.Layout
	src  string // holds "data.txt"
	src2 string
	m    Mounter
}

// newEnv makes an env without a mounter. Mounts left under base by a
// failing test are undone before t.TempDir removes base.
func newEnv(t *testing.T) *env {
	t.Helper()
	base := t.TempDir()
	t.Cleanup(func() { unmountUnder(t, base) }) // runs before TempDir's removal
	l, err := layout.New(filepath.Join(base, "data"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{base: base, l: l, src: filepath.Join(base, "src"), src2: filepath.Join(base, "src2")}
	mkdir(t, e.src)
	mkdir(t, e.src2)
	writeFile(t, filepath.Join(e.src, "data.txt"), "from source")
	return e
}

// forEachMounter runs f with the symlink mounter, then with the bind
// mounter where this process may bind-mount (skipped otherwise, saying why).
func forEachMounter(t *testing.T, f func(t *testing.T, e *env)) {
	t.Run("symlink", func(t *testing.T) {
		e := newEnv(t)
		e.m = NewSymlink(e.l)
		f(t, e)
	})
	t.Run("bind", func(t *testing.T) {
		requireBind(t)
		e := newEnv(t)
		e.m = NewBind(e.l)
		f(t, e)
	})
}

func (e *env) globalMount(t *testing.T, vol string) string {
	t.Helper()
	p, err := e.l.GlobalMount("plug", vol)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) podVolume(t *testing.T, uid, vol string) string {
	t.Helper()
	p, err := e.l.PodVolume(uid, "plug", vol)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) wantState(t *testing.T, target string, want State, wantSource string) {
	t.Helper()
	got, source, err := e.m.Inspect(target)
	if err != nil {
		t.Fatalf("Inspect(%s): %v", target, err)
	}
	if got != want {
		t.Fatalf("Inspect(%s) = %s, want %s", target, got, want)
	}
	if want == Mounted && !samePath(source, wantSource) {
		t.Fatalf("Inspect(%s) source = %q, want %q", target, source, wantSource)
	}
}

// samePath compares a reported path with an expected one, allowing the
// report to have symlinks resolved (the mount table does).
func samePath(got, want string) bool {
	if got == want {
		return true
	}
	resolved, err := filepath.EvalSymlinks(want)
	return err == nil && got == resolved
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o750))
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(data), 0o640))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// snapshot lists everything below dir (not following symlinks, but
// descending into mounts): relative path -> type, size and link target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			desc += " " + readFile(t, p)
		}
		if d.Type() == fs.ModeSymlink {
			dest, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + dest
		}
		out[strings.TrimPrefix(p, dir)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			t.Errorf("%s: was %q, now %q", k, before[k], after[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: created (%q)", k, after[k])
		}
	}
}

// TETHER_MOUNT_LEGACY=1 runs the package's tests with the path-by-path
// code only (legacyOnly), as on a kernel without openat2(2);
// TETHER_MOUNT_NOHOLD=1 with the budget of held descriptors spent (see
// tree), as in a process with thousands of agents.
func init() {
	if os.Getenv("TETHER_MOUNT_LEGACY") != "" {
		legacyOnly.Store(true)
	}
	if os.Getenv("TETHER_MOUNT_NOHOLD") != "" {
		noHold()
	}
}
