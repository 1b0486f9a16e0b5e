package mount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/node/layout"
)

// TestHeldDirRemoved: a directory the mounter holds open (pods/, mounts/,
// the root) removed and made again by someone else is found again: the
// next operations land in the new one, never in the removed one.
func TestHeldDirRemoved(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Publish(gm, pv, false))
		must(t, e.m.Unpublish(pv))
		must(t, e.m.Unstage(gm))
		// Gone and made again, as an operator's rm -r and a restart would.
		must(t, os.RemoveAll(e.l.Root()))
		mkdir(t, filepath.Join(e.l.Root(), "pods"))
		for range 2 {
			must(t, e.m.Stage(e.src, gm))
			must(t, e.m.Publish(gm, pv, false))
			e.wantState(t, pv, Mounted, gm)
			if got := readFile(t, filepath.Join(pv, "data.txt")); got != "from source" {
				t.Fatalf("read through the publish: %q", got)
			}
			must(t, e.m.Unpublish(pv))
			must(t, e.m.Unstage(gm))
			e.wantState(t, gm, Absent, "")
			must(t, CleanEmptyParents(e.l, gm, e.l.Root())) // mounts/, held, goes
		}
	})
}

// TestHeldDirReplacedBySymlink: a held directory removed and replaced by
// a symlink is refused when opened again (ErrOutside), and nothing is
// made through it.
func TestHeldDirReplacedBySymlink(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Publish(gm, pv, false))
		must(t, e.m.Unpublish(pv))
		must(t, e.m.Unstage(gm))
		elsewhere := filepath.Join(e.base, "elsewhere")
		mkdir(t, filepath.Join(elsewhere, "plug", "mounts"))
		for _, dir := range []string{"pods", "plugins"} {
			must(t, os.RemoveAll(filepath.Join(e.l.Root(), dir)))
			must(t, os.Symlink(elsewhere, filepath.Join(e.l.Root(), dir)))
		}
		before := snapshot(t, e.base)
		for name, err := range map[string]error{
			"Stage":     e.m.Stage(e.src, gm),
			"Publish":   e.m.Publish(e.src, pv, false),
			"Unpublish": e.m.Unpublish(pv),
			"Unstage":   e.m.Unstage(gm),
		} {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("%s through a held directory replaced by a symlink = %v, want ErrOutside", name, err)
			}
		}
		sameSnapshot(t, before, snapshot(t, e.base))
	})
}

// TestWorkloadDirSymlink: a symlink planted at a workload's directory
// (pods/<uid>, or below it) is refused by a publish of another volume
// there and by an unpublish, and nothing is made or removed through it.
func TestWorkloadDirSymlink(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm := e.globalMount(t, "vol-1")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Publish(gm, e.podVolume(t, "keep", "vol-1"), false)) // pods/ held
		elsewhere := filepath.Join(e.base, "elsewhere")
		mkdir(t, filepath.Join(elsewhere, "volumes", "plug", "vol-1"))
		pod, err := e.l.PodDir("uid-1")
		must(t, err)
		must(t, os.Symlink(elsewhere, pod))
		pod2, err := e.l.PodDir("uid-2")
		must(t, err)
		mkdir(t, filepath.Join(pod2, "volumes"))
		must(t, os.Symlink(filepath.Join(elsewhere, "volumes", "plug"), filepath.Join(pod2, "volumes", "plug")))
		before := snapshot(t, e.base)
		for _, uid := range []string{"uid-1", "uid-2"} {
			pv := e.podVolume(t, uid, "vol-1")
			if err := e.m.Publish(gm, pv, false); !errors.Is(err, ErrOutside) {
				t.Errorf("Publish through %s = %v, want ErrOutside", uid, err)
			}
			if err := e.m.Unpublish(pv); !errors.Is(err, ErrOutside) {
				t.Errorf("Unpublish through %s = %v, want ErrOutside", uid, err)
			}
		}
		sameSnapshot(t, before, snapshot(t, e.base))
	})
}

// TestSameWorkloadConcurrent: volumes of one workload published and
// unpublished at the same time, each unpublish removing the workload's
// directories once empty under the others' publishes, all succeed; at
// the end the workload's directories are gone and pods/ stays.
func TestSameWorkloadConcurrent(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		const vols, rounds = 6, 30
		var wg sync.WaitGroup
		errs := make(chan error, vols)
		for i := range vols {
			gm, pv := e.globalMount(t, fmt.Sprint("vol-", i)), e.podVolume(t, "uid-1", fmt.Sprint("vol-", i))
			must(t, e.m.Stage(e.src, gm))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					if err := e.m.Publish(gm, pv, false); err != nil {
						errs <- err
						return
					}
					if st, _, err := e.m.Inspect(pv); err != nil || st != Mounted {
						errs <- fmt.Errorf("%s after publish: %v %v", pv, st, err)
						return
					}
					if err := e.m.Unpublish(pv); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		pod, err := e.l.PodDir("uid-1")
		must(t, err)
		if exists(pod) || !exists(filepath.Join(e.l.Root(), layout.PodsDir)) {
			t.Error("want the workload's directory removed and pods/ kept")
		}
	})
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(fds)
}

// TestHeldBudget: with the process's budget of held descriptors spent,
// a mounter opens what it needs per operation and closes it after:
// every operation works, costs more, and leaves no descriptor open.
func TestHeldBudget(t *testing.T) {
	was := budgetMax(nil)
	budget.max = 0 // spent, whatever other tests' garbage gives back meanwhile
	t.Cleanup(func() { budget.max = was })
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
		fds := openFDs(t)
		var before map[string]OpCalls
		for i := range 3 {
			if i == 1 { // the first made the directories
				before = Syscalls()
			}
			must(t, e.m.Stage(e.src, gm))
			must(t, e.m.Publish(gm, pv, false))
			e.wantState(t, pv, Mounted, gm)
			must(t, e.m.Unpublish(pv))
			must(t, e.m.Unstage(gm))
		}
		e.wantState(t, gm, Absent, "")
		// Fewer is no error: other tests' garbage trees give their
		// descriptors back (finalizers) at any moment.
		if got := openFDs(t); got > fds {
			t.Errorf("%d descriptors open, was %d: want none held", got, fds)
		}
		// Nothing held: each stage and unstage opens mounts/ by its path
		// (one openat2) and closes it.
		for _, op := range []string{"stage", "unstage"} {
			if got := SyscallsSince(before)[op]; got.Calls["openat2"] != got.Ops || got.Calls["close"] != got.Ops {
				t.Errorf("%s: %v in %d operations, want an openat2 and a close each", op, got.Calls, got.Ops)
			}
		}
	})
}

// TestHeldBudgetReturned: the descriptors of mounters that are garbage
// go back to the budget.
func TestHeldBudgetReturned(t *testing.T) {
	if budgetSpent(nil) || legacyOnly.Load() {
		t.Skip("nothing is held here (TETHER_MOUNT_NOHOLD or TETHER_MOUNT_LEGACY)")
	}
	e := newEnv(t)
	start := settledBudget(t) // other tests' mounters given back first
	func() {
		var held int64
		for i := range 20 {
			m := NewSymlink(e.l)
			must(t, m.Stage(e.src, e.globalMount(t, fmt.Sprint("vol-", i))))
			held += m.(symlink).t.count.n.Load()
		}
		if held != 40 || budget.n.Load()-start != 40 { // the root and mounts/ each
			t.Fatalf("20 mounters hold %d descriptors (the budget counts %d), want 40", held, budget.n.Load()-start)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for budget.n.Load() > start {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors still counted after the mounters became garbage", budget.n.Load()-start)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanups run on a goroutine of their own
	}
}

// settledBudget collects garbage until the budget's count stays the same
// over a few collections (bounded), and returns it.
func settledBudget(t *testing.T) int64 {
	t.Helper()
	n, same := budget.n.Load(), 0
	for deadline := time.Now().Add(5 * time.Second); same < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the budget's count never settled")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if m := budget.n.Load(); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}

// noHold spends the budget of held descriptors for the whole test run.
func noHold() {
	budgetMax(nil)
	budget.max = 0
}
