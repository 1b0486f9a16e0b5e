package loop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
)

var loopPath = regexp.MustCompile(`^/dev/loop[0-9]+$`)

func TestAttachDetachRoundTrip(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	dev := f.attach(t, "excl", f.i1)
	if !loopPath.MatchString(dev) {
		t.Fatalf("device %q is not a loop device path", dev)
	}
	if got := sysBackingOf(t, dev); got != f.image("excl") {
		t.Fatalf("%s is bound to %q, want %q", dev, got, f.image("excl"))
	}
	if sysReadOnly(t, dev) {
		t.Errorf("%s of a read-write volume is read-only", dev)
	}
	if got := f.devices(t, f.i1); got["excl"] != dev || len(got) != 1 {
		t.Errorf("InstanceVolumes = %v, want excl at %s", got, dev)
	}
	q, err := f.c.VolumesAreAttached(ctx, map[cloud.InstanceID][]cloud.VolumeID{f.i1: {"excl", "multi"}, f.i2: {"excl"}})
	if err != nil {
		t.Fatal(err)
	}
	if !q[f.i1]["excl"] || q[f.i1]["multi"] || q[f.i2]["excl"] {
		t.Errorf("VolumesAreAttached = %v, want excl on %s only", q, f.i1)
	}
	if got := f.c.Attachments(); !slices.Equal(got["excl"], []cloud.InstanceID{f.i1}) || len(got) != 1 {
		t.Errorf("Attachments = %v", got)
	}

	f.detach(t, "excl", f.i1)
	waitNotBacking(t, dev, f.image("excl"))
	if got := f.devices(t, f.i1); len(got) != 0 {
		t.Errorf("InstanceVolumes after detach = %v, want none", got)
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("Attachments after detach = %v, want none", got)
	}
	f.detach(t, "excl", f.i1) // idempotent
}

func TestAttachIdempotent(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	if again := f.attach(t, "excl", f.i1); again != dev {
		t.Errorf("second attach = %s, want %s", again, dev)
	}
	if got := devicesOf(t, f.image("excl")); len(got) != 1 {
		t.Errorf("devices bound to the image: %v, want one", got)
	}
}

// A record whose device was released behind the cloud's back is stale: an
// attach binds a new device (the path may differ).
func TestAttachRebindsStaleRecord(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, out)
	}
	waitNotBacking(t, dev, f.image("excl"))
	again := f.attach(t, "excl", f.i1)
	if got := sysBackingOf(t, again); got != f.image("excl") {
		t.Fatalf("re-attach gave %s, bound to %q", again, got)
	}
	if got := f.devices(t, f.i1)["excl"]; got != again {
		t.Errorf("InstanceVolumes says %s, want %s", got, again)
	}
}

func TestExclusiveRefusedElsewhere(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "excl", f.i1)
	_, err := f.c.Attach(context.Background(), "excl", f.i2)
	if k := cloud.Classify(err); k != cloud.KindAttachedElsewhere {
		t.Fatalf("second attach: %v (kind %v), want attached-elsewhere", err, k)
	}
	if got := devicesOf(t, f.image("excl")); len(got) != 1 {
		t.Errorf("devices bound to the image: %v, want one", got)
	}
	if got := f.devices(t, f.i2); len(got) != 0 {
		t.Errorf("%s has %v, want nothing", f.i2, got)
	}
}

func TestMultiNode(t *testing.T) {
	for _, tc := range []struct {
		vol      cloud.VolumeID
		readOnly bool
	}{
		{"multi", false},
		{"ro", true},
	} {
		t.Run(string(tc.vol), func(t *testing.T) {
			f := newFixture(t, Config{})
			d1, d2 := f.attach(t, tc.vol, f.i1), f.attach(t, tc.vol, f.i2)
			if d1 == d2 {
				t.Fatalf("both instances got %s; want one device each", d1)
			}
			for _, dev := range []string{d1, d2} {
				if got := sysBackingOf(t, dev); got != f.image(tc.vol) {
					t.Errorf("%s is bound to %q", dev, got)
				}
				if got := sysReadOnly(t, dev); got != tc.readOnly {
					t.Errorf("%s read-only = %v, want %v", dev, got, tc.readOnly)
				}
			}
			if err := writeDevice(d1); (err == nil) == tc.readOnly {
				t.Errorf("writing to %s: %v; read-only %v", d1, err, tc.readOnly)
			}
			f.detach(t, tc.vol, f.i1)
			waitNotBacking(t, d1, f.image(tc.vol))
			if got := sysBackingOf(t, d2); got != f.image(tc.vol) {
				t.Errorf("detaching from %s released %s's device too (%q)", f.i1, f.i2, got)
			}
		})
	}
}

func TestAttachLimit(t *testing.T) {
	f := newFixture(t, Config{AttachLimit: 1})
	f.attach(t, "excl", f.i1)
	_, err := f.c.Attach(context.Background(), "multi", f.i1)
	if k := cloud.Classify(err); k != cloud.KindLimitReached {
		t.Fatalf("attach over the limit: %v (kind %v), want limit-reached", err, k)
	}
	if got := devicesOf(t, f.image("multi")); len(got) != 0 {
		t.Errorf("a refused attach left %v bound", got)
	}
	if err := f.c.SetAttachLimit(f.i1, 2); err != nil {
		t.Fatal(err)
	}
	f.attach(t, "multi", f.i1)
}

func TestNotFound(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"attach unknown volume", func() error { _, err := f.c.Attach(ctx, "nope", f.i1); return err }},
		{"attach to unknown instance", func() error { _, err := f.c.Attach(ctx, "excl", "i-nope-9"); return err }},
		{"detach unknown volume", func() error { return f.c.Detach(ctx, "nope", f.i1) }},
		{"detach from unknown instance", func() error { return f.c.Detach(ctx, "excl", "i-nope-9") }},
		{"instance of unknown node", func() error { _, err := f.c.InstanceID(ctx, "nope"); return err }},
		{"delete unknown volume", func() error { return f.c.DeleteVolume("nope") }},
		{"terminate unknown instance", func() error { return f.c.Terminate("i-nope-9") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := cloud.Classify(tc.call()); k != cloud.KindNotFound {
				t.Errorf("kind %v, want not-found", k)
			}
		})
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("Attachments = %v after failed calls", got)
	}
}

// A record whose device now holds another file never releases it: the
// detach drops the record and leaves the device alone.
func TestDetachStaleRecordLeavesOthersAlone(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, out)
	}
	waitNotBacking(t, dev, f.image("excl"))
	_, foreign := bindForeign(t, dev)
	f.detach(t, "excl", f.i1)
	if got := sysBackingOf(t, dev); got != foreign {
		t.Errorf("%s is bound to %q after the detach, want the foreign %q", dev, got, foreign)
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("Attachments = %v, want none", got)
	}
}

// The devices are real: a file system made through one instance's device
// is there on another's after the volume moves.
func TestDataFollowsVolume(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", "moved", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", dev, err, out)
	}
	f.detach(t, "excl", f.i1)
	dev2 := f.attach(t, "excl", f.i2)
	out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "LABEL", dev2).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "moved" {
		t.Errorf("blkid %s: %q, %v; want the label made on %s", dev2, out, err, dev)
	}
}

func TestInvalidNamesRefusedBeforeAnyPath(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	for _, bad := range []string{"../x", "a/b", "", ".", "..", "x\x00", "/abs"} {
		calls := map[string]func() error{
			"create volume":  func() error { return f.c.CreateVolume(cloud.VolumeID(bad), cloud.Exclusive, mib) },
			"delete volume":  func() error { return f.c.DeleteVolume(cloud.VolumeID(bad)) },
			"image path":     func() error { _, err := f.c.ImagePath(cloud.VolumeID(bad)); return err },
			"attach volume":  func() error { _, err := f.c.Attach(ctx, cloud.VolumeID(bad), f.i1); return err },
			"attach to":      func() error { _, err := f.c.Attach(ctx, "excl", cloud.InstanceID(bad)); return err },
			"detach volume":  func() error { return f.c.Detach(ctx, cloud.VolumeID(bad), f.i1) },
			"add instance":   func() error { _, err := f.c.AddInstanceChecked(cloud.NodeName(bad)); return err },
			"instance id":    func() error { _, err := f.c.InstanceID(ctx, cloud.NodeName(bad)); return err },
			"replace":        func() error { _, err := f.c.Replace(cloud.NodeName(bad)); return err },
			"terminate":      func() error { return f.c.Terminate(cloud.InstanceID(bad)) },
			"console detach": func() error { return f.c.ConsoleDetach("excl", cloud.InstanceID(bad)) },
		}
		for name, call := range calls {
			err := call()
			if !errors.Is(err, names.ErrInvalidName) || cloud.Classify(err) != cloud.KindTerminal {
				t.Errorf("%s %q: %v, want an invalid name, terminal", name, bad, err)
			}
		}
	}
	for _, p := range []string{f.dir + "/x.img", f.dir + "/images/a", f.dir + "/abs.img"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v)", p, err)
		}
	}
	if got := f.c.Attachments(); len(got) != 0 {
		t.Errorf("Attachments = %v", got)
	}
}

// writeDevice writes one sector at the start of dev, synchronously.
func writeDevice(dev string) error {
	fd, err := os.OpenFile(dev, os.O_WRONLY|os.O_SYNC, 0)
	if err != nil {
		return err
	}
	_, err = fd.Write(make([]byte, 512))
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	return err
}
