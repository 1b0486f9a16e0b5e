package mount

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// blockEnv is an env with the block mounter, whose tool runs are counted.
type blockEnv struct {
	*env
	mu   sync.Mutex
	runs map[string]int // tool name -> runs
}

// newBlockEnv skips t only when this process is not root. As root, loop
// devices and the tools must work: anything missing fails t, saying what.
func newBlockEnv(t *testing.T) *blockEnv {
	t.Helper()
	requireBind(t)
	for _, tool := range []string{"losetup", "blkid", "mkfs.ext4", "e2fsck", "debugfs"} {
		if _, err := FindTool(tool); err != nil {
			t.Fatalf("running as root, yet %v", err)
		}
	}
	e := &blockEnv{env: newEnv(t), runs: map[string]int{}}
	e.m = NewBlock(e.l, WithRunner(e.count))
	return e
}

func (e *blockEnv) count(name string, args ...string) (ToolOutput, error) {
	e.mu.Lock()
	e.runs[name]++
	e.mu.Unlock()
	return runTool(name, args...)
}

func (e *blockEnv) wantRuns(t *testing.T, tool string, want int) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if got := e.runs[tool]; got != want {
		t.Fatalf("%s ran %d times, want %d", tool, got, want)
	}
}

// newLoop attaches a loop device to a new sparse file of 32 MiB and
// returns its path. Its cleanup, registered at once, unmounts whatever
// the test left mounted under the env, then detaches the device.
func (e *blockEnv) newLoop(t *testing.T) string {
	t.Helper()
	return e.bindLoop(t, newImage(t), false)
}

// newImage makes a new sparse file of 32 MiB and returns its path.
func newImage(t *testing.T) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	must(t, err)
	must(t, f.Truncate(32<<20))
	must(t, f.Close())
	return img
}

// bindLoop attaches a loop device to img, read-only if readOnly, with
// newLoop's cleanup, and returns its path.
func (e *blockEnv) bindLoop(t *testing.T, img string, readOnly bool) string {
	t.Helper()
	args := []string{"--find", "--show"}
	if readOnly {
		args = append(args, "--read-only")
	}
	out, err := exec.Command("losetup", append(args, img)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot get a loop device: losetup %q: %v: %s", args, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		unmountUnder(t, e.base)
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("cleanup: losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// tool runs a tool for the test itself (not counted) and fails t if it
// fails.
func tool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := runTool(name, args...)
	if err != nil || out.Exit != 0 {
		t.Fatalf("%s %q: %v, exit %d: %s", name, args, err, out.Exit, toolMessage(out))
	}
	return string(out.Stdout)
}

// probeOf is what blkid finds on dev now.
func probeOf(t *testing.T, dev string) probe {
	t.Helper()
	out, err := runTool("blkid", blkidArgs(dev)...)
	must(t, err)
	p, err := parseBlkid(dev, out)
	must(t, err)
	return p
}

// sum is a checksum of the whole of dev.
func sum(t *testing.T, dev string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(dev)
	must(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	must(t, err)
	return [sha256.Size]byte(h.Sum(nil))
}

// writeAt writes b at offset off of dev.
func writeAt(t *testing.T, dev string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(b, off)
	must(t, errors.Join(err, f.Sync(), f.Close()))
}
