package loop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// The tests bind real loop devices: they need root and /dev/loop-control,
// and fail (never skip) without them. Every device a test binds is
// released by its cleanups, even when it fails: the Cloud's ReleaseAll
// first, then newDir's own sweep, which uses losetup (not this package's
// code) and reports what it had to release as a leak.

const mib = 1 << 20

// newDir returns a fresh data directory (canonical) whose cleanup
// releases, with losetup, any loop device still bound to a file in it.
func newDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if leaked := releaseUnder(t, dir); len(leaked) > 0 {
			t.Errorf("loop devices still bound to files in %s after the cloud's cleanup: %v", dir, leaked)
		}
	})
	return dir
}

// releaseUnder releases, with losetup, every loop device bound to a file
// below dir, and returns their names.
func releaseUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for dev, back := range losetupList(t) {
		if strings.HasPrefix(back, dir+"/") {
			if msg, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
				t.Errorf("losetup -d %s: %v: %s", dev, err, msg)
			}
			out = append(out, dev)
		}
	}
	return out
}

// losetupList returns every bound loop device and its backing file, as
// losetup lists them.
func losetupList(t *testing.T) map[string]string {
	t.Helper()
	raw, err := exec.Command("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE").Output()
	if err != nil {
		t.Fatalf("losetup --list: %v", err)
	}
	out := make(map[string]string)
	for line := range strings.Lines(string(raw)) {
		name, back, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if ok {
			out[name] = unescapeRaw(back)
		}
	}
	return out
}

// unescapeRaw undoes losetup --raw's escapes: every byte that is not
// printable ASCII, space and backslash included, written as \xNN.
func unescapeRaw(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i+4 <= len(s) && strings.HasPrefix(s[i:], `\x`) {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// devicesOf returns the loop devices bound to image, as losetup lists
// them.
func devicesOf(t *testing.T, image string) []string {
	t.Helper()
	var out []string
	for dev, back := range losetupList(t) {
		if back == image || back == image+deletedSuffix {
			out = append(out, dev)
		}
	}
	return out
}

// sysBackingOf reads what sysfs says dev is bound to: "" if unbound.
func sysBackingOf(t *testing.T, dev string) string {
	t.Helper()
	name := strings.TrimPrefix(dev, "/dev/")
	raw, err := os.ReadFile("/sys/block/" + name + "/loop/backing_file")
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(raw), "\n")
}

// sysReadOnly reads sysfs's read-only flag of dev.
func sysReadOnly(t *testing.T, dev string) bool {
	t.Helper()
	raw, err := os.ReadFile("/sys/block/" + strings.TrimPrefix(dev, "/dev/") + "/ro")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw)) == "1"
}

// waitNotBacking waits (bounded) until dev is no longer bound to image:
// the kernel finishes a release when the last descriptor closes.
func waitNotBacking(t *testing.T, dev, image string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() bool { return sysBackingOf(t, dev) != image },
		"%s no longer bound to %s after its release", dev, image)
}

// bindForeign binds a loop device to a file outside any cloud's data
// directory, as another program would, and releases it at cleanup.
func bindForeign(t *testing.T, dev string) (string, string) {
	t.Helper()
	file := filepath.Join(newDir(t), "foreign.img")
	if err := os.WriteFile(file, make([]byte, mib), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--find", "--show", file}
	if dev != "" {
		args = []string{dev, file}
	}
	// A device just released may still be tearing down (EBUSY until the
	// kernel has unbound it): try again while it shows no backing file. One
	// that another process bound meanwhile (loop devices are the machine's;
	// other test packages take free ones) is not this test's to use.
	deadline := time.Now().Add(5 * time.Second)
	out, err := exec.Command("losetup", args...).CombinedOutput()
	for err != nil && dev != "" && strings.Contains(string(out), "busy") && time.Now().Before(deadline) {
		if other := sysBackingOf(t, dev); other != "" {
			t.Skipf("%s was bound to %s by another process before this test could bind it", dev, other)
		}
		time.Sleep(10 * time.Millisecond)
		out, err = exec.Command("losetup", args...).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("losetup %v: %v: %s", args, err, out)
	}
	if dev == "" {
		dev = strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	return dev, file
}

// openCloud opens a Cloud on dir (cfg.Dir is set to it) and registers its
// cleanup: ReleaseAll, then Close.
func openCloud(t *testing.T, dir string, cfg Config) *Cloud {
	t.Helper()
	cfg.Dir = dir
	c, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v (these tests need root and loop devices)", err)
	}
	t.Cleanup(func() {
		if err := c.ReleaseAll(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("ReleaseAll: %v", err)
		}
		_ = c.Close()
	})
	return c
}

// crash drops c as a killed process would: its lock goes, nothing else
// happens (no Close). c must not be used afterwards.
func crash(c *Cloud) {
	c.op.Lock()
	defer c.op.Unlock()
	c.closed.Store(true)
	_ = c.lock.Close()
	c.lock = nil
}

// fixture is a cloud with instances for nodes n1 and n2 and 1 MiB volumes
// "excl" (exclusive), "multi" (multi-node, read-write) and "ro"
// (multi-node, read-only).
type fixture struct {
	c      *Cloud
	dir    string
	i1, i2 cloud.InstanceID
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	dir := newDir(t)
	c := openCloud(t, dir, cfg)
	err := c.CreateVolumes([]VolumeSpec{
		{ID: "excl", Mode: cloud.Exclusive, Size: mib},
		{ID: "multi", Mode: cloud.MultiNode, Size: mib},
		{ID: "ro", Mode: cloud.MultiNode, Size: mib, ReadOnly: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c, dir: dir}
	f.i1 = f.addInstance(t, "n1")
	f.i2 = f.addInstance(t, "n2")
	return f
}

func (f *fixture) addInstance(t *testing.T, node cloud.NodeName) cloud.InstanceID {
	t.Helper()
	id, err := f.c.AddInstanceChecked(node)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *fixture) image(vol cloud.VolumeID) string {
	return filepath.Join(f.dir, imagesName, string(vol)+imageSuffix)
}

func (f *fixture) attach(t *testing.T, vol cloud.VolumeID, inst cloud.InstanceID) string {
	t.Helper()
	dev, err := f.c.Attach(context.Background(), vol, inst)
	if err != nil {
		t.Fatalf("Attach(%s, %s): %v", vol, inst, err)
	}
	return dev
}

func (f *fixture) detach(t *testing.T, vol cloud.VolumeID, inst cloud.InstanceID) {
	t.Helper()
	if err := f.c.Detach(context.Background(), vol, inst); err != nil {
		t.Fatalf("Detach(%s, %s): %v", vol, inst, err)
	}
}

// devices returns what InstanceVolumes says inst has attached.
func (f *fixture) devices(t *testing.T, inst cloud.InstanceID) map[cloud.VolumeID]string {
	t.Helper()
	got, err := f.c.InstanceVolumes(context.Background(), []cloud.InstanceID{inst})
	if err != nil {
		t.Fatal(err)
	}
	return got[inst]
}

func TestUnescapeRaw(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/a\xc2\xb5\x20b/x.img`: "/tmp/aµ b/x.img",
		`/plain`:                    "/plain",
		`/bad\xZZ`:                  `/bad\xZZ`,
		`/short\x2`:                 `/short\x2`,
	} {
		if got := unescapeRaw(in); got != want {
			t.Errorf("unescapeRaw(%q) = %q, want %q", in, got, want)
		}
	}
}
