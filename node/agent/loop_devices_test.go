package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// fakeLoopCloud records one attachment per volume for instance i-n1.
type fakeLoopCloud struct {
	images   string                    // directory of the images
	attached map[cloud.VolumeID]string // volume -> device recorded
}

func (f fakeLoopCloud) InstanceOf(n cloud.NodeName) (cloud.InstanceID, bool) {
	return "i-n1", n == "n1"
}

func (f fakeLoopCloud) InstanceVolumes(_ context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	out := map[cloud.InstanceID]map[cloud.VolumeID]string{}
	for _, in := range insts {
		if in == "i-n1" {
			out[in] = f.attached
		}
	}
	return out, nil
}

func (f fakeLoopCloud) ImagePath(vol cloud.VolumeID) (string, error) {
	return filepath.Join(f.images, string(vol)+".img"), nil
}

// sourceNow is d.Source with its source released at once.
func sourceNow(ctx context.Context, d Devices, vol cloud.VolumeID, dev string) (string, error) {
	src, release, err := d.Source(ctx, vol, dev)
	release()
	return src, err
}

// bindLoop binds a free loop device to a new 1 MiB file at image and
// releases it at cleanup. It fails t (never skips) when it cannot: these
// tests need root and loop devices.
func bindLoop(t *testing.T, image string) string {
	t.Helper()
	if err := os.WriteFile(image, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", image).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot get a loop device (these tests need root and /dev/loop-control): losetup --find --show: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { release(t, dev) })
	return dev
}

func release(t *testing.T, dev string) {
	t.Helper()
	if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such device") {
		t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
	}
}

// waitReleased waits (bounded) until the kernel has finished releasing
// dev: a release is deferred while anyone (udev's probe) holds it open.
func waitReleased(t *testing.T, dev string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() bool {
		_, _, err := loopBacking(dev)
		return errors.Is(err, cloud.ErrNotFound)
	}, "%s unbound after its release", dev)
}

// A device path is handed to the mounter only when the cloud records the
// volume attached to this node's instance there and the kernel says the
// device is bound to the volume's image; a stale path, a released device,
// a symlink, a file or another node's call is refused with
// cloud.ErrNotFound.
func TestLoopDevicesSource(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := bindLoop(t, filepath.Join(dir, "a.img"))
	b := bindLoop(t, filepath.Join(dir, "b.img"))
	released := bindLoop(t, filepath.Join(dir, "gone.img"))
	release(t, released)
	waitReleased(t, released)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fc := fakeLoopCloud{images: dir, attached: map[cloud.VolumeID]string{
		"a": a, "stale": b, "gone": released, "link": link, "file": file, "null": "/dev/null", "dirty": a + "/../" + filepath.Base(a),
	}}
	d := LoopDevices{Cloud: fc, Node: "n1"}
	ctx := context.Background()
	if got, err := sourceNow(ctx, d, "a", a); err != nil || got != a {
		t.Fatalf("Source(a, %s) = %q, %v; want the device", a, got, err)
	}
	for _, c := range []struct {
		name   string
		node   cloud.NodeName
		vol    cloud.VolumeID
		device string
	}{
		{"another device than the cloud records", "n1", "a", b},
		{"a device bound to another volume's image", "n1", "stale", b},
		{"a released device", "n1", "gone", released},
		{"a symlink to the right device", "n1", "link", link},
		{"a regular file", "n1", "file", file},
		{"a character device", "n1", "null", "/dev/null"},
		{"an unclean path", "n1", "dirty", a + "/../" + filepath.Base(a)},
		{"a node without an instance", "n2", "a", a},
	} {
		d := LoopDevices{Cloud: fc, Node: c.node}
		got, err := sourceNow(ctx, d, c.vol, c.device)
		if !errors.Is(err, cloud.ErrNotFound) {
			t.Errorf("%s: Source(%s, %s) = %q, %v; want an error wrapping cloud.ErrNotFound", c.name, c.vol, c.device, got, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// A second loop device bound to the same image (another machine's view of
// the same ext4 disk) makes Source refuse, with ErrImageShared, until it
// is released.
func TestLoopDevicesSourceImageShared(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	image := filepath.Join(dir, "a.img")
	a := bindLoop(t, image)
	out, err := exec.Command("losetup", "--find", "--show", image).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot get a second loop device: %v: %s", err, out)
	}
	second := strings.TrimSpace(string(out))
	t.Cleanup(func() { release(t, second) })
	d := LoopDevices{Cloud: fakeLoopCloud{images: dir, attached: map[cloud.VolumeID]string{"a": a}}, Node: "n1"}
	got, err := sourceNow(context.Background(), d, "a", a)
	if !errors.Is(err, ErrImageShared) || !strings.Contains(err.Error(), second) {
		t.Fatalf("Source with %s bound to the image too = %q, %v; want ErrImageShared naming it", second, got, err)
	}
	release(t, second)
	waitReleased(t, second)
	if got, err := sourceNow(context.Background(), d, "a", a); err != nil || got != a {
		t.Fatalf("Source once %s is released = %q, %v; want %s", second, got, err, a)
	}
}

// bindTo binds a free loop device to the existing file image, read-only
// if readOnly, and releases it at cleanup.
func bindTo(t *testing.T, image string, readOnly bool) string {
	t.Helper()
	args := []string{"--find", "--show"}
	if readOnly {
		args = append(args, "--read-only")
	}
	out, err := exec.Command("losetup", append(args, image)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot get a loop device: losetup %q: %v: %s", args, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { release(t, dev) })
	return dev
}

// Read-only devices may share an image (machines mounting a ReadOnlyMany
// disk), never with a read-write device: a read-only device with a
// read-write one bound to its image is refused, as is a read-write one
// with read-only ones.
func TestLoopDevicesSourceReadOnlyShared(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	image := filepath.Join(dir, "a.img")
	if err := os.WriteFile(image, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	ro1, ro2 := bindTo(t, image, true), bindTo(t, image, true)
	ctx := context.Background()
	for _, dev := range []string{ro1, ro2} {
		d := LoopDevices{Cloud: fakeLoopCloud{images: dir, attached: map[cloud.VolumeID]string{"a": dev}}, Node: "n1"}
		if got, err := sourceNow(ctx, d, "a", dev); err != nil || got != dev {
			t.Fatalf("Source(%s) with read-only devices alone = %q, %v; want it", dev, got, err)
		}
	}
	rw := bindTo(t, image, false)
	for dev, want := range map[string]string{ro1: "bound read-write to [" + rw + "]", rw: ro1} {
		d := LoopDevices{Cloud: fakeLoopCloud{images: dir, attached: map[cloud.VolumeID]string{"a": dev}}, Node: "n1"}
		got, err := sourceNow(ctx, d, "a", dev)
		if !errors.Is(err, ErrImageShared) || !strings.Contains(err.Error(), want) {
			t.Errorf("Source(%s) with %s read-write = %q, %v; want ErrImageShared saying %q", dev, rw, got, err, want)
		}
	}
}

func TestLoopSharing(t *testing.T) {
	ro, rw := boundLoop{dev: "/dev/loop1", readOnly: true}, boundLoop{dev: "/dev/loop2"}
	for _, tc := range []struct {
		name     string
		readOnly bool
		others   []boundLoop
		want     []string
	}{
		{"alone", false, nil, nil},
		{"read-only with read-only", true, []boundLoop{ro}, nil},
		{"read-only with read-write", true, []boundLoop{ro, rw}, []string{"/dev/loop2"}},
		{"read-write with read-only", false, []boundLoop{ro}, []string{"/dev/loop1"}},
		{"read-write with both", false, []boundLoop{ro, rw}, []string{"/dev/loop1", "/dev/loop2"}},
	} {
		if got := sharing(tc.readOnly, tc.others); !slices.Equal(got, tc.want) {
			t.Errorf("%s: sharing = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The device Source hands over stays bound to the volume's image until
// its release, even when the cloud releases it meanwhile (an operator's
// detach right then): the kernel defers the release to the last close,
// so no other volume's image can be bound to the device before the mount
// holds it in turn, and the device is released once the source is. A
// source released at once (what Source did before it held anything)
// leaves the device to be released, free for the next image, between the
// check and the mount.
func TestLoopSourceHeldUntilReleased(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other := filepath.Join(dir, "other.img")
	if err := os.WriteFile(other, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}

	a := bindLoop(t, filepath.Join(dir, "a.img"))
	d := LoopDevices{Cloud: fakeLoopCloud{images: dir, attached: map[cloud.VolumeID]string{"a": a}}, Node: "n1"}
	got, done, err := d.Source(ctx, "a", a)
	if err != nil || got != a {
		t.Fatalf("Source(a, %s) = %q, %v; want the device", a, got, err)
	}
	t.Cleanup(done) // a failure below still lets the device go
	release(t, a)   // the cloud's release: the kernel defers it
	if backing, _, err := loopBacking(a); err != nil || backing != filepath.Join(dir, "a.img") {
		t.Fatalf("held %s after its release: bound to %q, %v; want still a.img", a, backing, err)
	}
	if out, err := exec.Command("losetup", a, other).CombinedOutput(); err == nil {
		release(t, a)
		t.Fatalf("bound another image to %s while it was held", a)
	} else {
		t.Logf("binding another image to the held %s: %v: %s", a, err, strings.TrimSpace(string(out)))
	}
	done()
	waitReleased(t, a) // the last close released it

	b := bindLoop(t, filepath.Join(dir, "b.img"))
	d = LoopDevices{Cloud: fakeLoopCloud{images: dir, attached: map[cloud.VolumeID]string{"b": b}}, Node: "n1"}
	if got, err := sourceNow(ctx, d, "b", b); err != nil || got != b {
		t.Fatalf("Source(b, %s) = %q, %v; want the device", b, got, err)
	}
	release(t, b)
	waitReleased(t, b) // nothing held it: free for the next image
}
