package mount

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/node/layout"
)

// memEnv is an env over a Memory table, with a snapshot of the disk and
// the system call count taken first: the memory mounter touches neither.
func memEnv(t *testing.T) (*env, *Memory) {
	t.Helper()
	e := newEnv(t)
	mem := NewMemory()
	e.m = mem.Mounter(e.l)
	before, sys := snapshot(t, e.base), Syscalls()
	t.Cleanup(func() {
		sameSnapshot(t, before, snapshot(t, e.base))
		for op, c := range SyscallsSince(sys) { // the package's tests run one at a time
			if c.Total() > 0 || c.Ops > 0 {
				t.Errorf("%d %s operations with %d system calls counted meanwhile", c.Ops, op, c.Total())
			}
		}
	})
	return e, mem
}

func TestMemoryRoundTrip(t *testing.T) {
	e, mem := memEnv(t)
	gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
	for range 2 { // every operation twice (I7)
		must(t, e.m.Stage(e.src, gm))
	}
	e.wantState(t, gm, Mounted, e.src)
	for range 2 {
		must(t, e.m.Publish(gm, pv, false))
	}
	e.wantState(t, pv, Mounted, gm)
	if got := mem.Mounts(); got != 2 {
		t.Fatalf("Mounts = %d, want 2", got)
	}
	for range 2 {
		must(t, e.m.Unpublish(pv))
	}
	e.wantState(t, pv, Absent, "")
	for range 2 {
		must(t, e.m.Unstage(gm))
	}
	e.wantState(t, gm, Absent, "")
	if got := mem.Mounts(); got != 0 {
		t.Fatalf("Mounts = %d after undoing all, want 0", got)
	}
}

func TestMemoryIdentities(t *testing.T) {
	e, _ := memEnv(t)
	gm, gm2, pv := e.globalMount(t, "vol-1"), e.globalMount(t, "vol-2"), e.podVolume(t, "uid-1", "vol-1")
	must(t, e.m.Stage(e.src, gm))
	must(t, e.m.Stage(e.src+"/./", gm)) // the same directory, spelled otherwise
	must(t, e.m.Stage(e.src2, gm2))
	if err := e.m.Stage(e.src2, gm); !errors.Is(err, ErrConflict) {
		t.Fatalf("Stage from another source = %v, want ErrConflict", err)
	}
	e.wantState(t, gm, Mounted, e.src)
	if err := e.m.Publish(e.podVolume(t, "uid-1", "vol-3"), pv, false); err == nil {
		t.Fatal("Publish from a path that is not staged succeeded")
	}
	if err := e.m.Publish(gm, gm2, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("Publish over a stage = %v, want ErrConflict", err)
	}
	must(t, e.m.Publish(gm, pv, false))
	if err := e.m.Publish(gm2, pv, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("Publish from another staged = %v, want ErrConflict", err)
	}
	must(t, e.m.Publish(gm, pv, true)) // another mode: changed, as the real ones do
	if mt := e.m.(memMounter).t.mounts[pv]; !mt.readOnly {
		t.Fatal("Publish read-only again did not change the mode")
	}
	e.wantState(t, pv, Mounted, gm)
	must(t, e.m.Unstage(gm)) // the publish stays, as a bind mount of an unmounted source does
	e.wantState(t, pv, Mounted, gm)
	if err := e.m.Stage("", e.globalMount(t, "vol-4")); err == nil {
		t.Fatal("Stage from an empty source succeeded")
	}
}

func TestMemoryRefusesTargetsOutside(t *testing.T) {
	e, mem := memEnv(t)
	for _, target := range []string{e.l.Root(), e.base, filepath.Join(e.l.Root(), "..", "x"), "/etc/x"} {
		if err := e.m.Stage(e.src, target); !errors.Is(err, ErrOutside) {
			t.Errorf("Stage at %s = %v, want ErrOutside", target, err)
		}
		if err := e.m.Unpublish(target); !errors.Is(err, ErrOutside) {
			t.Errorf("Unpublish at %s = %v, want ErrOutside", target, err)
		}
		if _, _, err := e.m.Inspect(target); !errors.Is(err, ErrOutside) {
			t.Errorf("Inspect at %s = %v, want ErrOutside", target, err)
		}
	}
	if got := mem.Mounts(); got != 0 {
		t.Fatalf("Mounts = %d, want 0", got)
	}
}

// TestMemoryScan: Scan reads the table, through wrappers, and a new
// mounter over the same root (an agent restarted) finds what the last
// one mounted; another root (another machine) is apart.
func TestMemoryScan(t *testing.T) {
	e, mem := memEnv(t)
	gm, gmB := e.globalMount(t, "vol-a"), e.globalMount(t, "vol-b")
	pv1, pv2 := e.podVolume(t, "uid-1", "vol-a"), e.podVolume(t, "uid-2", "vol-a")
	must(t, e.m.Stage(e.src, gm))
	must(t, e.m.Stage(e.src2, gmB))
	must(t, e.m.Publish(gm, pv1, false))
	must(t, e.m.Publish(gm, pv2, true))
	root := e.l.Root()
	odd := filepath.Join(root, "elsewhere", "x") // not a layout path: a walk would not look there
	bad := filepath.Join(root, "pods", "-bad", "volumes", "plug", "vol-a")
	must(t, e.m.Stage(e.src, odd))
	must(t, e.m.Publish(gm, bad, false))

	other, err := layout.New(filepath.Join(e.base, "other"))
	must(t, err)
	must(t, mem.Mounter(other).Stage(e.src, filepath.Join(other.Root(), "plugins", "plug", "mounts", "vol-z")))

	restarted := Observed(&wrapper{mem.Mounter(e.l)}, func(string, error, time.Duration) {})
	found, err := Scan(e.l, restarted)
	must(t, err)
	want := []Entry{
		{Kind: KindStage, Plugin: "plug", Volume: "vol-a", Path: gm, State: Mounted, Source: e.src},
		{Kind: KindStage, Plugin: "plug", Volume: "vol-b", Path: gmB, State: Mounted, Source: e.src2},
		{Kind: KindPublish, UID: "uid-1", Plugin: "plug", Volume: "vol-a", Path: pv1, State: Mounted, Source: gm},
		{Kind: KindPublish, UID: "uid-2", Plugin: "plug", Volume: "vol-a", Path: pv2, State: Mounted, Source: gm},
	}
	if !reflect.DeepEqual(found.Entries, want) {
		t.Errorf("Scan entries\n got %+v\nwant %+v", found.Entries, want)
	}
	if !reflect.DeepEqual(found.Invalid, []string{bad}) {
		t.Errorf("Invalid = %q, want %q", found.Invalid, bad)
	}
	empty, err := layout.New(filepath.Join(e.base, "empty"))
	must(t, err)
	if f, err := Scan(empty, mem.Mounter(empty)); err != nil || len(f.Entries)+len(f.Invalid) != 0 {
		t.Errorf("Scan of a machine with no mounts = %+v, %v", f, err)
	}
}

// wrapper is a check wrapping a mounter, as chaos and the bench do.
type wrapper struct{ Mounter }

func (w *wrapper) Unwrap() Mounter { return w.Mounter }
