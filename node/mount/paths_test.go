package mount

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tether/tether/node/layout"
)

// TestMakeParents: the root and every directory up to the target's parent
// are made, as real directories; a symlink or a file in the way is
// ErrOutside and nothing is made through it or after it.
func TestMakeParents(t *testing.T) {
	e := newEnv(t)
	pv := e.podVolume(t, "uid-1", "vol-1")
	must(t, MakeParents(e.l, pv))
	must(t, MakeParents(e.l, pv)) // all there: nothing to do
	for dir := filepath.Dir(pv); dir != e.base; dir = filepath.Dir(dir) {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v, want a directory", dir, err)
		}
	}
	if exists(pv) {
		t.Fatal("made the target itself")
	}

	elsewhere := filepath.Join(e.base, "elsewhere")
	mkdir(t, elsewhere)
	must(t, os.Symlink(elsewhere, filepath.Join(e.l.Root(), "pods", "uid-2")))
	writeFile(t, filepath.Join(e.l.Root(), "pods", "uid-3"), "in the way")
	before := snapshot(t, e.base)
	for _, target := range []string{
		e.podVolume(t, "uid-2", "vol-1"),
		e.podVolume(t, "uid-3", "vol-1"),
	} {
		if err := MakeParents(e.l, target); !errors.Is(err, ErrOutside) {
			t.Errorf("MakeParents(%s) = %v, want ErrOutside", target, err)
		}
	}
	if err := MakeParents(e.l, e.l.Root()+"/../elsewhere/x"); !errors.Is(err, ErrOutside) {
		t.Errorf("MakeParents outside the root = %v, want ErrOutside", err)
	}
	sameSnapshot(t, before, snapshot(t, e.base))
}

// TestCreateParentsGone: parents checked and then removed (CleanEmptyParents
// after another volume's unpublish) are made again before the target.
func TestCreateParentsGone(t *testing.T) {
	e := newEnv(t)
	pv := e.podVolume(t, "uid-1", "vol-1")
	must(t, MakeParents(e.l, pv))
	p, err := checkParents(e.l, newOp(OpPublish), pv)
	must(t, err)
	if !p.complete() {
		t.Fatalf("checkParents found %d of %d parents, want all", p.n, len(p.dirs))
	}
	must(t, CleanEmptyParents(e.l, pv, e.l.Root()))
	if exists(filepath.Join(e.l.Root(), "pods")) {
		t.Fatal("CleanEmptyParents left pods/")
	}
	must(t, p.create(func() error { return os.Symlink(e.src, pv) }))
	if got := readFile(t, filepath.Join(pv, "data.txt")); got != "from source" {
		t.Fatalf("read through the target: %q", got)
	}
}

// TestMakeChecksWhatItFinds: a missing parent that something else made
// meanwhile is used only if it is a real directory: a symlink is
// ErrOutside and nothing is made through it.
func TestMakeChecksWhatItFinds(t *testing.T) {
	e := newEnv(t)
	pv := e.podVolume(t, "uid-1", "vol-1")
	mkdir(t, filepath.Join(e.l.Root(), "pods"))
	p, err := checkParents(e.l, newOp(OpPublish), pv)
	must(t, err)
	if p.n != 1 {
		t.Fatalf("checkParents found %d parents, want 1 (pods)", p.n)
	}
	elsewhere := filepath.Join(e.base, "elsewhere")
	mkdir(t, elsewhere)
	must(t, os.Symlink(elsewhere, filepath.Join(e.l.Root(), "pods", "uid-1")))
	before := snapshot(t, e.base)
	if err := p.make(); !errors.Is(err, ErrOutside) {
		t.Errorf("make through a symlink = %v, want ErrOutside", err)
	}
	sameSnapshot(t, before, snapshot(t, e.base))
}

// TestBetween: the directories strictly between the root and a clean path
// below it, shallowest first; none for a path right below the root or
// not below it.
func TestBetween(t *testing.T) {
	l, err := layout.New("/data/node")
	must(t, err)
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/data/node/pods/u/volumes/p/v", []string{"/data/node/pods", "/data/node/pods/u", "/data/node/pods/u/volumes", "/data/node/pods/u/volumes/p"}},
		{"/data/node/plugins", []string{}},
		{"/data/node", nil},
		{"/data/nodes/pods/u", nil},
		{"/elsewhere/pods/u", nil},
	} {
		if got := between(l, c.path); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("between(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}
