package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/datatest"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Helpers of TestLoopUpSIGKILLMidStage: the ground truth read from the
// kernel (/proc/self/mountinfo, /sys/block) and the loop cloud's state
// file, never through tether's own code; the checksummed files; the
// cleanups.

// stateFile is the part of the loop cloud's state file read here.
type stateFile struct {
	Instances map[string]struct{ Node string }
	Volumes   map[string]struct {
		Attached map[string]struct{ Device, Image string }
	}
}

// attachedTo reads the loop cloud's state file (written whole by rename)
// and returns the device of the volume's one attachment, which must be to
// node n's instance.
func attachedTo(t *testing.T, data, n string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, process.LoopDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("the loop cloud's state: %v", err)
	}
	att := st.Volumes[sigkillVol].Attached
	if len(att) != 1 {
		t.Fatalf("the loop cloud records %s attached %d times (%v); want once, to %s", sigkillVol, len(att), att, n)
	}
	for inst, a := range att {
		if got := st.Instances[inst].Node; got != n {
			t.Fatalf("the loop cloud records %s attached to %s (node %q); want node %s", sigkillVol, inst, got, n)
		}
		return a.Device
	}
	return ""
}

// imagePath is the volume's image file.
func imagePath(data string) string {
	return filepath.Join(data, process.LoopDir, "images", sigkillVol+".img")
}

// devicesOf lists the loop devices the kernel has bound to the volume's
// image, sorted.
func devicesOf(t *testing.T, data string) []string {
	t.Helper()
	return boundBelow(t, imagePath(data), true)
}

// boundBelow lists the loop devices bound to path (exact) or to a file
// below it, sorted.
func boundBelow(t *testing.T, path string, exact bool) []string {
	t.Helper()
	files, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		t.Fatal(err)
	}
	var devs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // released meanwhile
		}
		back := strings.TrimSpace(string(b))
		if back == path || !exact && strings.HasPrefix(back, path+"/") {
			devs = append(devs, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	slices.Sort(devs)
	return devs
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct{ dev, point string }

func readMountinfo(t *testing.T) []mountEntry {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			out = append(out, mountEntry{dev: f[2], point: unescapeOctal(f[4])})
		}
	}
	return out
}

// unescapeOctal undoes the kernel's \ooo escapes of mountinfo's paths.
func unescapeOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountPoints lists every mount point.
func mountPoints(t *testing.T) []string {
	t.Helper()
	var pts []string
	for _, m := range readMountinfo(t) {
		pts = append(pts, m.point)
	}
	return pts
}

// mountsOf lists, sorted, where the block device dev is mounted.
func mountsOf(t *testing.T, dev string) []string {
	t.Helper()
	num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
	if err != nil {
		t.Fatal(err)
	}
	var pts []string
	for _, m := range readMountinfo(t) {
		if m.dev == strings.TrimSpace(string(num)) {
			pts = append(pts, m.point)
		}
	}
	slices.Sort(pts)
	return pts
}

// ext4UUID is the ext4 UUID on the volume's image: a disk formatted twice
// has two.
func ext4UUID(t *testing.T, data string) string {
	t.Helper()
	out, err := exec.Command(realTool(t, "blkid"), "-p", "-o", "value", "-s", "UUID", imagePath(data)).Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("blkid -p %s: %v", imagePath(data), err)
	}
	return strings.TrimSpace(string(out))
}

// The data-integrity checks (bootstrap/verify/datatest).
var (
	writeChecksummed = datatest.WriteChecksummed
	verifyChecksums  = datatest.VerifyChecksums
)

// releaseLoop, once tether has stopped, unmounts what its nodes left
// under data and releases every loop device of its cloud.
func releaseLoop(t *testing.T, data string) {
	t.Helper()
	nodes, _ := os.ReadDir(filepath.Join(data, "nodes"))
	for _, d := range nodes {
		dir := filepath.Join(data, "nodes", d.Name())
		l, err := layout.New(dir)
		if err == nil {
			err = agent.Teardown(dir, mount.NewBlock(l))
		}
		if err != nil {
			t.Errorf("teardown of %s: %v", dir, err)
		}
	}
	if err := process.ReleaseLoop(data); err != nil {
		t.Errorf("releasing the loop devices: %v", err)
	}
}

// sweepLoop runs last: whatever is still mounted under data, or bound to
// a file under it, is a leak of the test's cleanup: reported, then
// unmounted and released.
func sweepLoop(t *testing.T, data string) {
	t.Helper()
	var pts []string
	for _, p := range mountPoints(t) {
		if strings.HasPrefix(p, data+"/") {
			pts = append(pts, p)
		}
	}
	slices.SortFunc(pts, func(a, b string) int { return len(b) - len(a) }) // deepest first
	for _, p := range pts {
		t.Errorf("leak: %s still mounted after the test's cleanup", p)
		if err := unix.Unmount(p, 0); err != nil {
			t.Errorf("unmounting %s: %v; detaching it lazily", p, err)
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
	for _, dev := range boundBelow(t, data, false) {
		t.Errorf("leak: %s still bound to a file under %s after the test's cleanup", dev, data)
		if out, err := exec.Command(realTool(t, "losetup"), "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	}
}
