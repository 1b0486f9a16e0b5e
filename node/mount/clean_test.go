package mount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCleanEmptyParents(t *testing.T) {
	e := newEnv(t)
	pod, err := e.l.PodDir("uid-1")
	must(t, err)
	pv1, pv2 := e.podVolume(t, "uid-1", "vol-1"), e.podVolume(t, "uid-1", "vol-2")
	mkdir(t, pv1)
	mkdir(t, pv2)

	// vol-2 is still there: nothing to remove above vol-1.
	must(t, os.Remove(pv1))
	must(t, CleanEmptyParents(e.l, pv1, pod))
	if !exists(pv2) {
		t.Fatal("removed a sibling")
	}
	// Last one gone: plug and volumes go, the pod directory stays.
	must(t, os.Remove(pv2))
	must(t, CleanEmptyParents(e.l, pv2, pod))
	if exists(filepath.Join(pod, "volumes")) || !exists(pod) {
		t.Fatal("want volumes/ removed and the pod directory kept")
	}
	// Again, with everything gone: nothing to do.
	must(t, CleanEmptyParents(e.l, pv2, pod))
	// Up to the root: the root stays.
	must(t, CleanEmptyParents(e.l, pv2, e.l.Root()))
	if exists(pod) || !exists(e.l.Root()) {
		t.Fatal("want the pod directory removed and the root kept")
	}
}

func TestCleanEmptyParentsRefused(t *testing.T) {
	e := newEnv(t)
	pod, err := e.l.PodDir("uid-1")
	must(t, err)
	pv := e.podVolume(t, "uid-1", "vol-1")
	outside := filepath.Join(e.base, "outside")
	mkdir(t, filepath.Join(outside, "a", "b"))
	mkdir(t, filepath.Dir(pv))

	before := snapshot(t, e.base)
	for _, c := range []struct{ dir, stop string }{
		{filepath.Join(outside, "a", "b"), outside},
		{pv, e.base},
		{pv, pv},
		{pod, pv},
		{filepath.Join(outside, "a", "b"), e.l.Root()},
		{e.l.Root() + "/pods/../../outside/a/b", e.l.Root()},
	} {
		if err := CleanEmptyParents(e.l, c.dir, c.stop); err == nil {
			t.Errorf("CleanEmptyParents(%s, %s) succeeded", c.dir, c.stop)
		}
	}
	sameSnapshot(t, before, snapshot(t, e.base))
}

// TestCleanEmptyParentsSymlink: a symlink on the way up is neither removed
// nor followed.
func TestCleanEmptyParentsSymlink(t *testing.T) {
	e := newEnv(t)
	pod, err := e.l.PodDir("uid-1")
	must(t, err)
	elsewhere := filepath.Join(e.base, "elsewhere")
	mkdir(t, filepath.Join(elsewhere, "plug"))
	mkdir(t, pod)
	must(t, os.Symlink(elsewhere, filepath.Join(pod, "volumes")))

	before := snapshot(t, e.base)
	err = CleanEmptyParents(e.l, e.podVolume(t, "uid-1", "vol-1"), pod)
	if !errors.Is(err, ErrOutside) {
		t.Errorf("CleanEmptyParents through a symlink = %v, want ErrOutside", err)
	}
	sameSnapshot(t, before, snapshot(t, e.base))
}

// TestCleanEmptyParentsStopMissing: with stop missing (and so everything
// below it), nothing above stop is removed, empty or not.
func TestCleanEmptyParentsStopMissing(t *testing.T) {
	e := newEnv(t)
	pod, err := e.l.PodDir("uid-1")
	must(t, err)
	mkdir(t, filepath.Join(e.l.Root(), "pods"))

	before := snapshot(t, e.base)
	must(t, CleanEmptyParents(e.l, e.podVolume(t, "uid-1", "vol-1"), pod))
	sameSnapshot(t, before, snapshot(t, e.base))
}

// TestCleanEmptyParentsFile: a file where a directory was is never
// removed.
func TestCleanEmptyParentsFile(t *testing.T) {
	e := newEnv(t)
	pod, err := e.l.PodDir("uid-1")
	must(t, err)
	mkdir(t, pod)
	writeFile(t, filepath.Join(pod, "volumes"), "data")

	before := snapshot(t, e.base)
	if err := CleanEmptyParents(e.l, e.podVolume(t, "uid-1", "vol-1"), e.l.Root()); !errors.Is(err, ErrOutside) {
		t.Errorf("CleanEmptyParents through a file = %v, want ErrOutside", err)
	}
	sameSnapshot(t, before, snapshot(t, e.base))
}
