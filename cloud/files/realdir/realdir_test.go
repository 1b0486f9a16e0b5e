package realdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIn(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	outside := t.TempDir()
	must(os.Symlink(outside, filepath.Join(root, "link")))
	must(os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "alias")))
	for _, c := range []struct {
		path string
		bad  string // "": accepted; else the refusal wraps ErrUnsafe and names it
	}{
		{filepath.Join(root, "a"), ""},
		{filepath.Join(root, "a", "b"), ""},
		{filepath.Join(root, "file"), "file"},
		{filepath.Join(root, "link"), "link"},
		{filepath.Join(root, "alias", "b"), "alias"},
		{root, "not below"},
		{outside, "not below"},
		{filepath.Join(root, "a", "..", "..", "x"), "not below"},
	} {
		err := In(root, c.path)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("In(%s) = %v, want nil", c.path, err)
		case c.bad != "" && (!errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("In(%s) = %v, want ErrUnsafe naming %q", c.path, err, c.bad)
		}
	}
	if err := In(root, filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnsafe) {
		t.Errorf("In(missing) = %v, want fs.ErrNotExist and not ErrUnsafe", err)
	}
	if err := In("", root); !errors.Is(err, ErrUnsafe) {
		t.Errorf("In with no root = %v, want ErrUnsafe", err)
	}
}

// TestInRelativeDotDot: a relative root made only of ".." components, and
// a path with more of them: by its string the path starts with the root,
// but it lies above it, not below.
func TestInRelativeDotDot(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(base, "a", "b")) // ".." is base/a
	for _, c := range []struct {
		root, path string
		ok         bool
	}{
		{"..", filepath.Join("..", "b"), true},
		{"..", filepath.Join("..", "b", "c"), true},
		{filepath.Join("..", ".."), filepath.Join("..", "..", "a", "b"), true},
		{"..", filepath.Join("..", ".."), false},           // base
		{"..", filepath.Join("..", "..", "a"), false},      // base/a: the root itself
		{"..", filepath.Join("..", "..", "a", "b"), false}, // below the root, but not by this path
		{filepath.Join("..", ".."), filepath.Join("..", "..", ".."), false},
	} {
		err := In(c.root, c.path)
		switch {
		case c.ok && err != nil:
			t.Errorf("In(%s, %s) = %v, want nil", c.root, c.path, err)
		case !c.ok && (!errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "not below")):
			t.Errorf("In(%s, %s) = %v, want ErrUnsafe: not below", c.root, c.path, err)
		}
	}
}

// TestInBelowSymlinks: symlinks above the root (the operator's choice of
// data directory: /tmp may be one) are followed, relative ones and ones
// climbing through another symlink with ".." too; a root that is itself a
// symlink is refused, naming it.
func TestInBelowSymlinks(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"r/root/vol/sub", "r/other"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		"abs":      filepath.Join(base, "r"),
		"rel":      "r",
		"r/x":      "other",
		"up":       "r/x/..", // r/other/.., which is r
		"rootlink": "r/root",
	} {
		if err := os.Symlink(to, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, top := range []string{"abs", "rel", "up"} {
		root := filepath.Join(base, top, "root")
		for _, path := range []string{filepath.Join(root, "vol"), filepath.Join(root, "vol", "sub")} {
			if err := In(root, path); err != nil {
				t.Errorf("In(%s, %s) = %v, want nil", root, path, err)
			}
		}
	}
	root := filepath.Join(base, "rootlink")
	if err := In(root, filepath.Join(root, "vol")); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), root) {
		t.Errorf("In(symlinked root) = %v, want ErrUnsafe naming %s", err, root)
	}
}
