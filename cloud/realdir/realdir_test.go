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
