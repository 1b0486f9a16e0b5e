package mount

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/node/layout"
)

// TestBindUnmountBusy: a mount in use (an open file) is detached lazily and
// its directory removed.
func TestBindUnmountBusy(t *testing.T) {
	requireBind(t)
	e := newEnv(t)
	e.m = NewBind(e.l)
	gm := e.globalMount(t, "vol-1")
	must(t, e.m.Stage(e.src, gm))
	f, err := os.Open(filepath.Join(gm, "data.txt"))
	must(t, err)
	t.Cleanup(func() { f.Close() })
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")
	if got := readFile(t, filepath.Join(e.src, "data.txt")); got != "from source" {
		t.Fatalf("source changed: %q", got)
	}
}

// TestBindUnmountStacked: mounts stacked on one target (a stage repeated
// by hand, or by another tool) are all peeled off.
func TestBindUnmountStacked(t *testing.T) {
	requireBind(t)
	e := newEnv(t)
	e.m = NewBind(e.l)
	gm := e.globalMount(t, "vol-1")
	must(t, e.m.Stage(e.src, gm))
	must(t, unix.Mount(e.src2, gm, "", unix.MS_BIND, ""))
	e.wantState(t, gm, Mounted, e.src2)
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")
}

// TestBindReplacesSymlink: a target left by the symlink mounter (an agent
// that ran unprivileged before) is replaced by a bind mount.
func TestBindReplacesSymlink(t *testing.T) {
	requireBind(t)
	e := newEnv(t)
	gm := e.globalMount(t, "vol-1")
	must(t, NewSymlink(e.l).Stage(e.src, gm))
	e.m = NewBind(e.l)
	e.wantState(t, gm, Partial, "")
	must(t, e.m.Stage(e.src, gm))
	e.wantState(t, gm, Mounted, e.src)
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")
}

// TestBindRootThroughSymlink: the mount table shows resolved paths; a root
// reached through a symlink (above the root, which is allowed) still finds
// its mounts.
func TestBindRootThroughSymlink(t *testing.T) {
	requireBind(t)
	e := newEnv(t)
	realDir := filepath.Join(e.base, "real")
	mkdir(t, realDir)
	must(t, os.Symlink(realDir, filepath.Join(e.base, "link")))
	l, err := layout.New(filepath.Join(e.base, "link", "data"))
	must(t, err)
	e.l, e.m = l, NewBind(l)
	gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
	must(t, e.m.Stage(e.src, gm))
	must(t, e.m.Stage(e.src, gm))
	must(t, e.m.Publish(gm, pv, true))
	must(t, e.m.Publish(gm, pv, true))
	e.wantState(t, pv, Mounted, gm)
	must(t, e.m.Unpublish(pv))
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")
}
