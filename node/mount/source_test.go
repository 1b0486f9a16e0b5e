package mount

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymlinkSourceRefused: a source that is a symlink (to a directory
// outside the data directory) is never mounted: Stage fails with
// ErrUnsafeSource naming it, and nothing is created or mounted.
func TestSymlinkSourceRefused(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		outside := filepath.Join(e.base, "outside")
		mkdir(t, outside)
		writeFile(t, filepath.Join(outside, "secret"), "outside")
		link := filepath.Join(e.base, "content", "vol-a")
		mkdir(t, filepath.Dir(link))
		must(t, os.Symlink(outside, link))
		target := e.globalMount(t, "vol-a")

		before := snapshot(t, e.base)
		err := e.m.Stage(link, target)
		if !errors.Is(err, ErrUnsafeSource) || !strings.Contains(err.Error(), link) {
			t.Fatalf("Stage(symlink) = %v, want ErrUnsafeSource naming %s", err, link)
		}
		t.Logf("Stage: %v", err)
		sameSnapshot(t, before, snapshot(t, e.base))
		e.wantState(t, target, Absent, "")
	})
}

// TestCheckSourceIn: what the agent checks a device directory against its
// cloud's content root with, before mounting it.
func TestCheckSourceIn(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "cloud")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "vol-a"), filepath.Join(root, "sub", "vol-b"), outside} {
		mkdir(t, d)
	}
	must(t, os.Symlink(outside, filepath.Join(root, "vol-link")))
	must(t, os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "sublink")))
	mkdir(t, filepath.Join(outside, "vol-c"))
	writeFile(t, filepath.Join(root, "file"), "x")
	rootLink := filepath.Join(base, "rootlink")
	must(t, os.Symlink(outside, rootLink))
	dataLink := filepath.Join(base, "datalink") // a symlink above the root: allowed
	must(t, os.Symlink(base, dataLink))

	for _, c := range []struct {
		root, source string
		bad          string // the path the error names; "" for no error
	}{
		{root, filepath.Join(root, "vol-a"), ""},
		{root, filepath.Join(root, "sub", "vol-b"), ""},
		{filepath.Join(dataLink, "cloud"), filepath.Join(dataLink, "cloud", "vol-a"), ""},
		{root, filepath.Join(root, "vol-link"), filepath.Join(root, "vol-link")},
		{root, filepath.Join(root, "sublink", "vol-b"), filepath.Join(root, "sublink")},
		{root, filepath.Join(root, "file"), filepath.Join(root, "file")},
		{root, outside, outside},
		{root, root, root},
		{root, filepath.Join(root, "..", "outside"), outside},
		{rootLink, filepath.Join(rootLink, "vol-c"), rootLink},
		{"", filepath.Join(root, "vol-a"), filepath.Join(root, "vol-a")},
	} {
		err := CheckSourceIn(c.root, c.source)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("CheckSourceIn(%s, %s) = %v, want nil", c.root, c.source, err)
		case c.bad != "" && (!errors.Is(err, ErrUnsafeSource) || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("CheckSourceIn(%s, %s) = %v, want ErrUnsafeSource naming %s", c.root, c.source, err, c.bad)
		}
	}
}
