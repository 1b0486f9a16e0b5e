package mount

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tether/tether/node/layout"
)

// cycle is one volume's life on a node, step by step, as the node agent
// runs it: a stage, a publish for a new workload, its unpublish, the
// unstage. legacy adds what the agent did after each undo before pods/
// and mounts/ were kept: CleanEmptyParents up to pods/ after the
// unpublish (the path-by-path Unpublish now does it itself, the same
// way), up to the root after the unstage.
type cycle struct {
	l      layout.Layout
	m      Mounter
	src    string
	legacy bool
	n      int
}

// newCycle sets a node up as one with work: another workload's volume
// staged and published stays for the whole run, so that pods/ and
// mounts/ are never empty (the removals the cycles would otherwise pay
// for are a node's last volume's, not every volume's).
func newCycle(tb testing.TB, mounter string, legacy bool) *cycle {
	tb.Helper()
	was := legacyOnly.Load()
	legacyOnly.Store(legacy)
	tb.Cleanup(func() { legacyOnly.Store(was) })
	base := tb.TempDir()
	tb.Cleanup(func() { unmountUnder(tb, base) })
	l, err := layout.New(filepath.Join(base, "data"))
	mustTB(tb, err)
	c := &cycle{l: l, m: NewSymlink(l), src: filepath.Join(base, "src"), legacy: legacy}
	if mounter == "bind" {
		c.m = NewBind(l)
	}
	mustTB(tb, os.Mkdir(c.src, 0o750))
	gm, err := l.GlobalMount("plug", "other")
	mustTB(tb, err)
	pv, err := l.PodVolume("other", "plug", "other")
	mustTB(tb, err)
	mustTB(tb, c.m.Stage(c.src, gm))
	mustTB(tb, c.m.Publish(gm, pv, false))
	return c
}

// steps of a cycle, in order.
var steps = []string{"stage", "publish", "unpublish", "unstage"}

// run runs one cycle, calling each step through do.
func (c *cycle) run(tb testing.TB, do func(step string, f func() error)) {
	c.n++
	vol, uid := "vol-"+strconv.Itoa(c.n), "pod-"+strconv.Itoa(c.n)
	gm, err := c.l.GlobalMount("plug", vol)
	mustTB(tb, err)
	pv, err := c.l.PodVolume(uid, "plug", vol)
	mustTB(tb, err)
	do("stage", func() error { return c.m.Stage(c.src, gm) })
	do("publish", func() error { return c.m.Publish(gm, pv, false) })
	do("unpublish", func() error { return c.m.Unpublish(pv) })
	do("unstage", func() error {
		if err := c.m.Unstage(gm); err != nil || !c.legacy {
			return err
		}
		return CleanEmptyParents(c.l, gm, c.l.Root())
	})
}

// counts runs n cycles (after one to warm up) and returns the system
// calls of each step, on average, and by kind.
func (c *cycle) counts(tb testing.TB, n int) (map[string]float64, map[string]map[string]int64) {
	tb.Helper()
	c.run(tb, func(_ string, f func() error) { mustTB(tb, f()) })
	per, kinds := map[string]float64{}, map[string]map[string]int64{}
	for range n {
		c.run(tb, func(step string, f func() error) {
			before := Syscalls()
			mustTB(tb, f())
			if kinds[step] == nil {
				kinds[step] = map[string]int64{}
			}
			for _, oc := range SyscallsSince(before) {
				per[step] += float64(oc.Total()) / float64(n)
				for k, v := range oc.Calls {
					kinds[step][k] += v
				}
			}
		})
	}
	return per, kinds
}

func mustTB(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// TestSyscallsPerOp: the system calls of each step of a volume's life
// on a node with work, for each mounter, are at most the bound (what
// they cost when it was written: a regression fails). The path-by-path
// code (as before, and as on a kernel without openat2) is measured next
// to it and logged, with the ratios; strace -f agreed with both counts.
func TestSyscallsPerOp(t *testing.T) {
	type counts struct{ stage, publish, unpublish, unstage float64 }
	for _, c := range []struct {
		mounter string
		want    counts // the path-by-path code: symlink 5, 8, 9, 7; bind 6, 9, 12, 10
	}{
		{"symlink", counts{2, 5, 7, 2}},
		{"bind", counts{3, 6, 7, 2}},
	} {
		t.Run(c.mounter, func(t *testing.T) {
			if c.mounter == "bind" {
				requireBind(t)
			}
			fast, kinds := newCycle(t, c.mounter, false).counts(t, 5)
			if noOpenat2.Load() {
				t.Skip("no openat2 here: only the path-by-path code runs")
			}
			if budgetSpent(nil) {
				t.Skip("the bounds are for held directories; nothing is held here (TETHER_MOUNT_NOHOLD)")
			}
			slow, _ := newCycle(t, c.mounter, true).counts(t, 5)
			want := map[string]float64{"stage": c.want.stage, "publish": c.want.publish, "unpublish": c.want.unpublish, "unstage": c.want.unstage}
			var sumFast, sumSlow float64
			for _, step := range steps {
				t.Logf("%-9s %4.1f calls %v; path by path %4.1f (ratio %.2f)", step, fast[step], kinds[step], slow[step], fast[step]/slow[step])
				if fast[step] > want[step] {
					t.Errorf("%s: %.1f system calls, want at most %.0f (%v)", step, fast[step], want[step], kinds[step])
				}
				sumFast, sumSlow = sumFast+fast[step], sumSlow+slow[step]
			}
			t.Logf("cycle     %4.1f calls; path by path %4.1f (ratio %.2f)", sumFast, sumSlow, sumFast/sumSlow)
		})
	}
}
