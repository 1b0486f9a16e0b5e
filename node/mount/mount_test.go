package mount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Absent: "absent", Mounted: "mounted", Partial: "partial", 7: "State(7)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

// TestRoundTrip stages and publishes, reads and writes through the publish,
// and undoes it all, doing every operation twice (I7).
func TestRoundTrip(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		for range 2 {
			must(t, e.m.Stage(e.src, gm))
		}
		e.wantState(t, gm, Mounted, e.src)
		for range 2 {
			must(t, e.m.Publish(gm, pv, false))
		}
		e.wantState(t, pv, Mounted, gm)

		if got := readFile(t, filepath.Join(pv, "data.txt")); got != "from source" {
			t.Fatalf("read through publish: %q", got)
		}
		writeFile(t, filepath.Join(pv, "out.txt"), "from workload")
		if got := readFile(t, filepath.Join(e.src, "out.txt")); got != "from workload" {
			t.Fatalf("read back from source: %q", got)
		}

		for range 2 {
			must(t, e.m.Unpublish(pv))
		}
		e.wantState(t, pv, Absent, "")
		for range 2 {
			must(t, e.m.Unstage(gm))
		}
		e.wantState(t, gm, Absent, "")
		if exists(pv) || exists(gm) {
			t.Fatal("targets left behind")
		}
		if got := readFile(t, filepath.Join(e.src, "out.txt")); got != "from workload" {
			t.Fatalf("source content lost after unstage: %q", got)
		}
	})
}

func TestOtherSourceRefused(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, gm2, pv := e.globalMount(t, "vol-1"), e.globalMount(t, "vol-2"), e.podVolume(t, "uid-1", "vol-1")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Stage(e.src2, gm2))
		if err := e.m.Stage(e.src2, gm); !errors.Is(err, ErrConflict) {
			t.Fatalf("Stage from another source = %v, want ErrConflict", err)
		}
		e.wantState(t, gm, Mounted, e.src)
		must(t, e.m.Publish(gm, pv, false))
		if err := e.m.Publish(gm2, pv, false); !errors.Is(err, ErrConflict) {
			t.Fatalf("Publish from another staged = %v, want ErrConflict", err)
		}
		e.wantState(t, pv, Mounted, gm)
	})
}

func TestBadSource(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm := e.globalMount(t, "vol-1")
		file := filepath.Join(e.src, "data.txt")
		for _, src := range []string{"", filepath.Join(e.base, "missing"), file} {
			if err := e.m.Stage(src, gm); err == nil {
				t.Errorf("Stage(%q) succeeded", src)
			}
		}
		if exists(e.l.Root()) {
			t.Error("a refused Stage created the data directory")
		}
	})
}

func TestReadOnlyPublish(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		must(t, e.m.Stage(e.src, gm))
		for range 2 {
			must(t, e.m.Publish(gm, pv, true))
		}
		err := os.WriteFile(filepath.Join(pv, "x"), nil, 0o640)
		if e.m.Name() == "symlink" {
			// Documented: the symlink mounter does not enforce read-only.
			if err != nil {
				t.Fatalf("symlink write: %v", err)
			}
			return
		}
		if err == nil {
			t.Fatal("write through a read-only publish succeeded")
		}
		writeFile(t, filepath.Join(gm, "staged.txt"), "still writable")
		// Repeating with another mode changes it (this also completes a
		// publish interrupted between bind and read-only remount).
		must(t, e.m.Publish(gm, pv, false))
		writeFile(t, filepath.Join(pv, "rw.txt"), "ok")
		must(t, e.m.Publish(gm, pv, true))
		if err := os.WriteFile(filepath.Join(pv, "y"), nil, 0o640); err == nil {
			t.Fatal("write after switching back to read-only succeeded")
		}
	})
}

func TestUndoAbsent(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		must(t, e.m.Unpublish(pv))
		must(t, e.m.Unstage(gm))
		// An unpublish interrupted after it removed the target: repeating
		// it removes the workload's directories, now empty; pods/ stays.
		mkdir(t, filepath.Dir(pv))
		must(t, e.m.Unpublish(pv))
		e.wantState(t, pv, Absent, "")
		pod, err := e.l.PodDir("uid-1")
		must(t, err)
		if exists(pod) || !exists(filepath.Dir(pod)) {
			t.Error("want the workload's directories removed and pods/ kept")
		}
		// A workload directory that holds anything else stays, and so does
		// what it holds.
		mkdir(t, filepath.Dir(pv))
		writeFile(t, filepath.Join(pod, "etc-hosts"), "kept")
		must(t, e.m.Unpublish(pv))
		if exists(filepath.Join(pod, "volumes")) || readFile(t, filepath.Join(pod, "etc-hosts")) != "kept" {
			t.Error("want volumes/ removed and the workload's other files kept")
		}
	})
}

func TestInspectStates(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		e.wantState(t, gm, Absent, "")

		mkdir(t, gm) // a plain directory: an interrupted stage
		e.wantState(t, gm, Partial, "")
		must(t, e.m.Stage(e.src, gm)) // completes it
		e.wantState(t, gm, Mounted, e.src)

		mkdir(t, filepath.Dir(pv)) // a dangling symlink
		must(t, os.Symlink(filepath.Join(e.base, "gone"), pv))
		e.wantState(t, pv, Partial, "")
		must(t, e.m.Publish(gm, pv, false)) // replaces it
		e.wantState(t, pv, Mounted, gm)

		must(t, e.m.Unpublish(pv))
		mkdir(t, pv)
		e.wantState(t, pv, Partial, "")
		must(t, e.m.Unpublish(pv)) // removes the empty directory
		e.wantState(t, pv, Absent, "")
	})
}

// TestDataNeverDeleted: a directory with data at a target is not a mount;
// it is neither mounted over nor removed.
func TestDataNeverDeleted(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm := e.globalMount(t, "vol-1")
		mkdir(t, gm)
		writeFile(t, filepath.Join(gm, "precious"), "keep")
		e.wantState(t, gm, Partial, "")
		if err := e.m.Stage(e.src, gm); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("Stage on data = %v, want ErrNotEmpty", err)
		}
		if err := e.m.Unstage(gm); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("Unstage of data = %v, want ErrNotEmpty", err)
		}
		if got := readFile(t, filepath.Join(gm, "precious")); got != "keep" {
			t.Fatalf("data changed: %q", got)
		}
	})
}
