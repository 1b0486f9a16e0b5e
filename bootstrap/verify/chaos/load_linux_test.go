package chaos

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// unrelatedMounts is how many mounts the loaded host carries: enough that
// one read of /proc/self/mountinfo takes many times longer than on an idle
// host (the scale at which the old checker judged changes seconds late and
// reported false violations).
const unrelatedMounts = 3000

// The verdicts do not depend on load: with thousands of unrelated mounts
// in the mount table (every mount, unmount and scan of the agents reads
// it), the same short chaos run still reports nothing and converges.
func TestChaosVerdictsHoldOnALoadedHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	before := mountinfoLines(t)
	loadMountTable(t, unrelatedMounts)
	if got := mountinfoLines(t); got < before+unrelatedMounts {
		t.Fatalf("mount table has %d lines, want at least %d", got, before+unrelatedMounts)
	}
	rep := run(t, Config{Seed: 1, Duration: 3 * time.Second, Volumes: 12, Nodes: 3})
	if rep.Violations != 0 || !rep.Converged {
		t.Fatalf("loaded host: %d violations, converged=%v:\n%s", rep.Violations, rep.Converged, details(rep))
	}
}

// loadMountTable mounts a private tmpfs and n tmpfs mounts inside it, all
// removed (one lazy unmount of the parent takes its children along) in
// t.Cleanup.
func loadMountTable(t *testing.T, n int) {
	t.Helper()
	base := t.TempDir()
	if err := unix.Mount("chaos-load", base, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("running as root, cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(base, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", base, err)
		}
	})
	if err := unix.Mount("", base, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		dir := filepath.Join(base, fmt.Sprintf("m%04d", i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("chaos-load", dir, "tmpfs", 0, "size=4k"); err != nil {
			t.Fatal(err)
		}
	}
}

func mountinfoLines(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}
