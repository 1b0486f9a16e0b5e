package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// teardownBound is how long a teardown with hung calls may take here: its
// deadlines are milliseconds, so seconds mean it waited on a hung call.
const teardownBound = 10 * time.Second

// mountedDir stages each volume (its source a directory of its own) and
// publishes it for workload w1 under a fresh data directory, with symlink
// mounts behind h's gates.
func mountedDir(t *testing.T, h *hangs, vols ...string) (string, mount.Mounter) {
	t.Helper()
	dir := t.TempDir()
	l, err := layout.New(filepath.Join(dir, "node"))
	if err != nil {
		t.Fatal(err)
	}
	m := h.wrap(mount.NewSymlink(l))
	for _, v := range vols {
		src := filepath.Join(dir, "cloud", v)
		if err := os.MkdirAll(src, 0o750); err != nil {
			t.Fatal(err)
		}
		staged, err := l.GlobalMount("p", v)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := l.PodVolume("w1", "p", v)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Stage(src, staged); err != nil {
			t.Fatal(err)
		}
		if err := m.Publish(staged, pub, false); err != nil {
			t.Fatal(err)
		}
	}
	return l.Root(), m
}

// left lists what Scan still finds mounted under root, as "kind volume".
func left(t *testing.T, root string) []string {
	t.Helper()
	l, err := layout.New(root)
	if err != nil {
		t.Fatal(err)
	}
	found, err := mount.Scan(l, mount.NewSymlink(l))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range found.Entries {
		out = append(out, e.Kind+" "+e.Volume)
	}
	return out
}

// A hung unpublish costs its own deadline, no more: the teardown goes on
// with the rest, and its error names the mount left (and the stage under
// it, which is then in use and tried all the same).
func TestTeardownBoundsAHungUnmount(t *testing.T) {
	h := newHangs(t)
	root, m := mountedDir(t, h, "a", "b")
	h.hang("unpublish:a")
	start := time.Now()
	err := TeardownContext(context.Background(), root, m, 50*time.Millisecond)
	if took := time.Since(start); took > teardownBound {
		t.Fatalf("teardown took %s with a hung unmount", took)
	}
	if !errors.Is(err, ErrUnmountHung) || !strings.Contains(err.Error(), filepath.Join("w1", "volumes", "p", "a")) {
		t.Fatalf("err = %v, want the hung unpublish of a named", err)
	}
	if _, blocked := h.calls("unpublish:a"); blocked != 1 {
		t.Fatalf("unpublish of a: %d calls blocked, want 1 (left running)", blocked)
	}
	got := left(t, root)
	for _, g := range got {
		if strings.HasSuffix(g, " b") {
			t.Fatalf("b was not torn down: %v left", got)
		}
	}
	if len(got) == 0 {
		t.Fatal("nothing left: the hung unpublish of a cannot have happened")
	}
}

// The whole teardown ends with its context, however long each call may
// take: the call hung then is reported, and every mount not tried yet.
func TestTeardownStopsAtItsDeadline(t *testing.T) {
	h := newHangs(t)
	root, m := mountedDir(t, h, "a", "b")
	h.hang("unpublish:b") // publishes go first, b's before a's
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := RebootContext(ctx, root, m, 0) // no bound per call: only ctx's
	if took := time.Since(start); took > teardownBound {
		t.Fatalf("reboot took %s past its deadline", took)
	}
	if !errors.Is(err, ErrUnmountHung) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a hung call and the deadline", err)
	}
	for _, v := range []string{"a", "b"} {
		if !strings.Contains(err.Error(), filepath.Join("w1", "volumes", "p", v)) {
			t.Errorf("err does not name the publish of %s: %v", v, err)
		}
	}
	if n, _ := h.calls("unpublish:a"); n != 0 {
		t.Fatalf("unpublish of a tried %d times after the deadline", n)
	}
}

// A scan whose Inspect hangs gives up on that mount's state within the
// call bound and unmounts it all the same.
func TestTeardownGetsPastAHungInspect(t *testing.T) {
	h := newHangs(t)
	root, m := mountedDir(t, h, "a")
	h.hang("inspect:a")
	start := time.Now()
	err := TeardownContext(context.Background(), root, m, 50*time.Millisecond)
	if took := time.Since(start); took > teardownBound {
		t.Fatalf("teardown took %s with a hung inspect", took)
	}
	if err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if _, blocked := h.calls("inspect:a"); blocked == 0 {
		t.Fatal("no inspect of a hung: the test proves nothing")
	}
	if got := left(t, root); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
}
