package mount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOutsideRefused: no operation on a target outside the root creates,
// changes or removes anything, anywhere around the data directory.
func TestOutsideRefused(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		victim := filepath.Join(e.base, "victim")
		mkdir(t, victim)
		mkdir(t, filepath.Join(e.l.Root(), "pods"))
		targets := []string{
			e.l.Root(),
			e.l.Root() + "/",
			filepath.Join(e.base, "outside", "x"),
			victim,
			e.l.Root() + "/../victim",
			e.l.Root() + "/pods/../../outside/x",
			e.l.Root() + "x/pods/u",
			"pods/u/volumes/p/v",
			"",
			"/",
		}
		before := snapshot(t, e.base)
		for _, target := range targets {
			checkOutside(t, e, target)
		}
		sameSnapshot(t, before, snapshot(t, e.base))
	})
}

func checkOutside(t *testing.T, e *env, target string) {
	t.Helper()
	errs := map[string]error{
		"Stage":     e.m.Stage(e.src, target),
		"Publish":   e.m.Publish(e.src, target, false),
		"Unstage":   e.m.Unstage(target),
		"Unpublish": e.m.Unpublish(target),
	}
	_, _, errs["Inspect"] = e.m.Inspect(target)
	for op, err := range errs {
		if !errors.Is(err, ErrOutside) {
			t.Errorf("%s(%q) = %v, want ErrOutside", op, target, err)
		}
	}
}

// TestSymlinkedParentRefused: a symlink between the root and a target
// (planted, or left by the symlink mounter) is never followed to create or
// remove anything.
func TestSymlinkedParentRefused(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		elsewhere := filepath.Join(e.base, "elsewhere")
		mkdir(t, filepath.Join(elsewhere, "u", "volumes", "plug", "vol-1"))
		mkdir(t, e.l.Root())
		must(t, os.Symlink(elsewhere, filepath.Join(e.l.Root(), "pods")))
		pv := e.podVolume(t, "u", "vol-1")
		deeper := e.podVolume(t, "new", "vol-1")

		before := snapshot(t, e.base)
		for name, err := range map[string]error{
			"Publish existing": e.m.Publish(e.src, pv, false),
			"Publish new":      e.m.Publish(e.src, deeper, false),
			"Stage":            e.m.Stage(e.src, pv),
			"Unpublish":        e.m.Unpublish(pv),
			"Unstage":          e.m.Unstage(pv),
		} {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("%s through a symlinked parent = %v, want ErrOutside", name, err)
			}
		}
		sameSnapshot(t, before, snapshot(t, e.base))
	})
}
