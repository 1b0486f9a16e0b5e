package loop

import (
	"context"
	"os/exec"
	"testing"

	"github.com/tether/tether/cloud"
)

// Open keeps an attachment whose device was released behind its back (a
// reboot does the same) and binds it a new device.
func TestReconcileRebindsReleasedDevice(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	keep := f.attach(t, "multi", f.i1)
	crash(f.c)
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, out)
	}
	waitNotBacking(t, dev, f.image("excl"))

	c := openCloud(t, f.dir, Config{})
	got := instanceVolumes(t, c, f.i1)
	if b := sysBackingOf(t, got["excl"]); b != f.image("excl") {
		t.Errorf("after Open excl is at %q, bound to %q; want a device bound to %s", got["excl"], b, f.image("excl"))
	}
	if got["multi"] != keep {
		t.Errorf("multi moved from %s to %s; its device held", keep, got["multi"])
	}
	if n := len(devicesOf(t, f.image("excl"))); n != 1 {
		t.Errorf("%d devices bound to excl's image, want 1", n)
	}
}

// Open never releases a recorded device that now holds another file: it
// binds the volume a new one and leaves that device to its new owner.
func TestReconcileLeavesReboundDeviceAlone(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	crash(f.c)
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, out)
	}
	waitNotBacking(t, dev, f.image("excl"))
	_, foreign := bindForeign(t, dev)

	c := openCloud(t, f.dir, Config{})
	got := instanceVolumes(t, c, f.i1)["excl"]
	if got == dev || sysBackingOf(t, got) != f.image("excl") {
		t.Errorf("excl is at %s (bound to %q), want a new device bound to its image", got, sysBackingOf(t, got))
	}
	if b := sysBackingOf(t, dev); b != foreign {
		t.Errorf("%s is bound to %q, want the foreign file %s", dev, b, foreign)
	}
}

// Open releases devices bound to its images that no record claims (a
// crash between a bind and its state write leaves one).
func TestReconcileReleasesOrphans(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	crash(f.c)
	out, err := exec.Command("losetup", "--find", "--show", f.image("excl")).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	orphan := string(out[:len(out)-1])

	c := openCloud(t, f.dir, Config{})
	waitNotBacking(t, orphan, f.image("excl"))
	if got := instanceVolumes(t, c, f.i1)["excl"]; got != dev {
		t.Errorf("excl at %s after Open, want %s", got, dev)
	}
}

func TestReleaseAll(t *testing.T) {
	f := newFixture(t, Config{})
	devs := map[string]cloud.VolumeID{
		f.attach(t, "excl", f.i1):  "excl",
		f.attach(t, "multi", f.i1): "multi",
		f.attach(t, "ro", f.i2):    "ro",
	}
	if err := f.c.ReleaseAll(); err != nil {
		t.Fatal(err)
	}
	for dev, vol := range devs {
		waitNotBacking(t, dev, f.image(vol))
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("Attachments = %v", got)
	}
	if !f.c.Running(f.i1) {
		t.Error("ReleaseAll stopped an instance")
	}
}

func instanceVolumes(t *testing.T, c *Cloud, inst cloud.InstanceID) map[cloud.VolumeID]string {
	t.Helper()
	got, err := c.InstanceVolumes(context.Background(), []cloud.InstanceID{inst})
	if err != nil {
		t.Fatal(err)
	}
	return got[inst]
}
