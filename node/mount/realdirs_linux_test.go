package mount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/node/layout"
)

// TestRealDirs: only a directory reached through directories alone is
// vouched for; a symlink anywhere on the way, a file or a missing
// directory is "cannot tell".
func TestRealDirs(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "a", "b")
	mkdir(t, real)
	must(t, os.Symlink(filepath.Join(base, "a"), filepath.Join(base, "alink")))
	must(t, os.Symlink(real, filepath.Join(base, "blink")))
	writeFile(t, filepath.Join(base, "file"), "x")
	for _, c := range []struct {
		dir  string
		want bool
	}{
		{real, true},
		{filepath.Join(base, "alink", "b"), false}, // a symlink on the way
		{filepath.Join(base, "blink"), false},      // the directory itself is a symlink
		{filepath.Join(base, "file"), false},
		{filepath.Join(base, "a", "missing"), false},
		{filepath.Join(base, "file", "below"), false},
	} {
		if got := realDirs(nil, c.dir); got != c.want {
			t.Errorf("realDirs(%s) = %v, want %v", c.dir, got, c.want)
		}
	}
	if noOpenat2.Load() {
		t.Skip("no openat2 here: realDirs cannot tell anything")
	}
}

// TestCheckParentsFastAgrees: checkParents answers the same with realDirs
// as by the walk alone, for every shape of the directories between the
// root and a target, and for a data directory below a symlink (allowed;
// realDirs cannot tell, so the walk runs).
func TestCheckParentsFastAgrees(t *testing.T) {
	base := t.TempDir()
	elsewhere := filepath.Join(base, "elsewhere")
	mkdir(t, filepath.Join(elsewhere, "volumes", "plug")) // what a followed symlink would find
	l, err := layout.New(filepath.Join(base, "data"))
	must(t, err)
	root := l.Root()
	mkdir(t, filepath.Join(root, "pods", "full", "volumes", "plug"))
	mkdir(t, filepath.Join(root, "pods", "part"))
	must(t, os.Symlink(elsewhere, filepath.Join(root, "pods", "link")))
	writeFile(t, filepath.Join(root, "pods", "file"), "x")
	must(t, os.Symlink(root, filepath.Join(base, "datalink")))
	linked, err := layout.New(filepath.Join(base, "datalink"))
	must(t, err)

	was := noOpenat2.Load()
	t.Cleanup(func() { noOpenat2.Store(was) })
	type answer struct {
		n       int
		outside bool
		err     bool
	}
	ask := func(l layout.Layout, uid string) answer {
		target, err := l.PodVolume(uid, "plug", "vol-1")
		must(t, err)
		p, err := checkParents(l, nil, target)
		return answer{p.n, errors.Is(err, ErrOutside), err != nil}
	}
	for _, c := range []struct {
		l    layout.Layout
		uid  string
		want answer
	}{
		{l, "full", answer{n: 4}},
		{l, "part", answer{n: 2}},
		{l, "none", answer{n: 1}},
		{l, "link", answer{n: 1, outside: true, err: true}},
		{l, "file", answer{n: 1, outside: true, err: true}},
		{linked, "full", answer{n: 4}},
		{linked, "link", answer{n: 1, outside: true, err: true}},
	} {
		noOpenat2.Store(true)
		walked := ask(c.l, c.uid)
		noOpenat2.Store(false)
		fast := ask(c.l, c.uid)
		if walked != c.want || fast != c.want {
			t.Errorf("%s/pods/%s: walk %+v, with realDirs %+v, want %+v", c.l.Root(), c.uid, walked, fast, c.want)
		}
	}
}
