package process

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/bootstrap/verify/datatest"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// The loop tests run tether on the loop cloud: real loop devices, ext4
// formatted by the agents' block mounter, real mounts. They need root,
// loop devices and e2fsprogs, and fail (never skip) without them. Every
// device and mount a test makes is released by its cleanups, even when
// it fails: the Embedded's own teardown first (stop, unmount every node,
// release every device: discardLoop), then newLoopDir's sweep, which
// reads the kernel's tables (not tether's code) and reports what it had
// to release as a leak.

// newLoopDir returns a fresh data directory, with its symlinks resolved
// (the kernel shows loop devices' backing files so), whose cleanup,
// registered first so that it runs last, unmounts whatever is still
// mounted below it and releases every loop device still bound to a file
// below it, failing the test for each.
func newLoopDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sweepLoopDir(t, dir) })
	return dir
}

func sweepLoopDir(t *testing.T, dir string) {
	t.Helper()
	ids, err := mount.MountIDs()
	if err != nil {
		t.Errorf("reading the mount table: %v", err)
	}
	var points []string
	for p := range ids {
		if strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) }) // deepest first
	for _, p := range points {
		t.Errorf("leak: %s still mounted after the test's cleanup", p)
		if err := unix.Unmount(p, 0); err != nil {
			t.Errorf("unmounting %s: %v; detaching it lazily", p, err)
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.HasPrefix(string(b), dir+"/") {
			continue
		}
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(f)))
		t.Errorf("leak: %s still bound to %s after the test's cleanup", dev, strings.TrimSpace(string(b)))
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	}
}

// loopConfig is an embedded tether on the loop cloud with two nodes, a
// sync every second and 32 MiB disks.
func loopConfig(t *testing.T, dir string) Config {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Cloud, cfg.Nodes = dir, CloudLoop, 2
	cfg.LogOutput, cfg.LogLevel = testLog{t}, "warn"
	cfg.Controller.SyncPeriod = time.Second
	cfg.Agent.StopGrace = 200 * time.Millisecond
	cfg.Agent.HeartbeatEvery = time.Second // a restarted controller hears the agents soon
	cfg.Loop.VolumeSize = 32 << 20
	return cfg
}

// testLog writes tether's log lines into the test's.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// startLoop starts cfg and registers its teardown (discardLoop).
func startLoop(t *testing.T, cfg Config) *Embedded {
	t.Helper()
	e, err := StartEmbedded(cfg)
	if err != nil {
		t.Fatalf("starting tether on the loop cloud: %v (these tests need root, loop devices and e2fsprogs)", err)
	}
	t.Cleanup(func() { discardLoop(t, e) })
	return e
}

// discardLoop stops e, unmounts everything its nodes have mounted and
// releases every loop device of its cloud.
func discardLoop(t *testing.T, e *Embedded) {
	t.Helper()
	if err := e.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, n := range e.NodeNames {
		m, err := e.Mounter(n)
		if err == nil {
			err = agent.Teardown(e.NodeDir(n), m)
		}
		if err != nil {
			t.Errorf("teardown of %s: %v", n, err)
		}
	}
	if err := ReleaseLoop(e.cfg.DataDir); err != nil {
		t.Errorf("releasing the loop devices: %v", err)
	}
}

// podPath is where workload uid sees volume vol on node n.
func podPath(t *testing.T, e *Embedded, n cloud.NodeName, uid string, vol cloud.VolumeID) string {
	t.Helper()
	l, err := layout.New(e.NodeDir(n))
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.PodVolume(uid, e.Plugin(), string(vol))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mountedOn reports whether path on node n is a working mount.
func mountedOn(e *Embedded, n cloud.NodeName, path string) bool {
	m, err := e.Mounter(n)
	if err != nil {
		return false
	}
	st, _, err := m.Inspect(path)
	return err == nil && st == mount.Mounted
}

// attachedOnlyTo reports whether vol is attached to n's instance and to
// no other.
func attachedOnlyTo(e *Embedded, vol cloud.VolumeID, n cloud.NodeName) bool {
	inst, ok := e.Account.InstanceOf(n)
	return ok && slices.Equal(e.Account.Attachments()[vol], []cloud.InstanceID{inst})
}

// waitServed waits until workload uid's volume vol is attached to n alone
// and mounted at its path there, and returns the path.
func waitServed(t *testing.T, e *Embedded, n cloud.NodeName, uid string, vol cloud.VolumeID) string {
	t.Helper()
	p := podPath(t, e, n, uid, vol)
	testkit.Eventually(t, 60*time.Second, func() bool {
		return attachedOnlyTo(e, vol, n) && mountedOn(e, n, p)
	}, "%s mounted for %s on %s", vol, uid, n)
	return p
}

// The data-integrity checks (bootstrap/verify/datatest).
var (
	writeChecksummed = datatest.WriteChecksummed
	verifyChecksums  = datatest.VerifyChecksums
)

// fsUUID is the ext4 UUID on vol's image: a disk formatted twice has two.
func fsUUID(t *testing.T, e *Embedded, vol cloud.VolumeID) string {
	t.Helper()
	img, err := e.Account.(*loopAccount).ImagePath(vol)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "UUID", img).Output()
	if err != nil {
		t.Fatalf("blkid -p %s: %v", img, err)
	}
	return strings.TrimSpace(string(out))
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// holdOpen opens path, as a process using the mount would, until the
// returned function (or the test's end) closes it.
func holdOpen(t *testing.T, path string) func() {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	done := func() { once.Do(func() { f.Close() }) }
	t.Cleanup(done)
	return done
}
