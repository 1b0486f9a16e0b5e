package loop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestTerminateStartReplaceDelete(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	dev := f.attach(t, "excl", f.i1)
	if err := f.c.Terminate(f.i1); err != nil {
		t.Fatal(err)
	}
	waitNotBacking(t, dev, f.image("excl"))
	if f.c.Running(f.i1) || len(f.c.Attachments()) != 0 {
		t.Fatalf("after Terminate: running %v, attachments %v", f.c.Running(f.i1), f.c.Attachments())
	}
	if got := listed(t, f.c, f.i1); got == nil || len(got) != 0 {
		t.Errorf("a stopped instance has %v, want an empty map", got)
	}
	if _, err := f.c.Attach(ctx, "excl", f.i1); cloud.Classify(err) != cloud.KindRetryable {
		t.Errorf("attach to a stopped instance: %v, want retryable", err)
	}
	if err := f.c.Start(f.i1); err != nil {
		t.Fatal(err)
	}
	f.attach(t, "excl", f.i1)

	i3, err := f.c.Replace("n1")
	if err != nil {
		t.Fatal(err)
	}
	if i3 == f.i1 {
		t.Fatalf("Replace kept the ID %s", i3)
	}
	if got, _ := f.c.InstanceID(ctx, "n1"); got != i3 {
		t.Errorf("n1 is backed by %s, want %s", got, i3)
	}
	if err := f.c.Detach(ctx, "excl", f.i1); cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("detach from the replaced instance: %v, want not-found", err)
	}
	if got := listed(t, f.c, f.i1); got != nil {
		t.Errorf("the replaced instance is listed: %v", got)
	}
	if len(devicesOf(t, f.image("excl"))) != 0 {
		t.Error("Replace left excl's device bound")
	}

	if err := f.c.Delete(f.i2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.InstanceID(ctx, "n2"); cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("InstanceID of a deleted instance's node: %v, want not-found", err)
	}
}

func TestDeleteVolume(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "excl", f.i1)
	if err := f.c.DeleteVolume("excl"); !errors.Is(err, ErrVolumeInUse) {
		t.Fatalf("deleting an attached volume: %v, want ErrVolumeInUse", err)
	}
	f.detach(t, "excl", f.i1)
	if err := f.c.DeleteVolume("excl"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(f.image("excl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image of a deleted volume: %v", err)
	}
	if _, _, ok := f.c.Volume("excl"); ok {
		t.Error("the deleted volume is still there")
	}
	if _, err := f.c.Attach(context.Background(), "excl", f.i1); cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("attach of a deleted volume: %v, want not-found", err)
	}
}

func TestCreateVolume(t *testing.T) {
	f := newFixture(t, Config{})
	for _, tc := range []struct {
		name    string
		spec    VolumeSpec
		wantErr bool
	}{
		{"sparse", VolumeSpec{ID: "big", Mode: cloud.Exclusive, Size: 1 << 30}, false},
		{"existing keeps its mode", VolumeSpec{ID: "excl", Mode: cloud.MultiNode, Size: mib}, false},
		{"zero size", VolumeSpec{ID: "z", Mode: cloud.Exclusive}, true},
		{"not whole sectors", VolumeSpec{ID: "odd", Mode: cloud.Exclusive, Size: 1000}, true},
		{"unknown mode", VolumeSpec{ID: "m", Mode: 7, Size: mib}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.c.CreateVolumes([]VolumeSpec{tc.spec})
			if (err != nil) != tc.wantErr {
				t.Fatalf("CreateVolumes: %v, want error %v", err, tc.wantErr)
			}
			_, statErr := os.Lstat(f.image(tc.spec.ID))
			if tc.wantErr && !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("a refused volume has an image (%v)", statErr)
			}
		})
	}
	if mode, _, _ := f.c.Volume("excl"); mode != cloud.Exclusive {
		t.Errorf("excl's mode became %v", mode)
	}
	fi, err := os.Stat(f.image("big"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 1<<30 {
		t.Errorf("image size %d, want %d", fi.Size(), 1<<30)
	}
}

// listed returns InstanceVolumes' answer for inst: nil if inst is absent.
func listed(t *testing.T, c *Cloud, inst cloud.InstanceID) map[cloud.VolumeID]string {
	t.Helper()
	got, err := c.InstanceVolumes(context.Background(), []cloud.InstanceID{inst})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := got[inst]; ok && m == nil {
		t.Fatalf("%s maps to a nil map", inst)
	}
	return got[inst]
}

// Prepare puts content on a new image before the volume exists: no device
// is bound to the image meanwhile, the content is there once the volume
// is, a failure creates nothing of the batch, and a volume that exists is
// not prepared again. VolumeReadOnly says how each volume was made.
func TestCreateVolumePrepared(t *testing.T) {
	f := newFixture(t, Config{})
	var prepared []string
	mark := func(image string) error {
		prepared = append(prepared, filepath.Base(image))
		if devs := devicesOf(t, image); len(devs) > 0 {
			t.Errorf("%s is bound to %v while prepared", image, devs)
		}
		if _, _, ok := f.c.Volume(cloud.VolumeID(strings.TrimSuffix(filepath.Base(image), imageSuffix))); ok {
			t.Errorf("%s's volume exists before it is prepared", image)
		}
		img, err := os.OpenFile(image, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = img.WriteAt([]byte("prepared"), 4096)
		return errors.Join(err, img.Close())
	}
	fail := func(string) error { return errors.New("injected") }

	err := f.c.CreateVolumes([]VolumeSpec{
		{ID: "a", Mode: cloud.MultiNode, Size: mib, ReadOnly: true, Prepare: mark},
		{ID: "b", Mode: cloud.MultiNode, Size: mib, ReadOnly: true, Prepare: fail},
	})
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("CreateVolumes with a failing Prepare: %v", err)
	}
	for _, id := range []cloud.VolumeID{"a", "b"} {
		if _, _, ok := f.c.Volume(id); ok {
			t.Errorf("%s was created by a failed batch", id)
		}
		if _, err := os.Lstat(f.image(id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s's image is left (%v)", id, err)
		}
	}

	prepared = nil
	if err := f.c.CreateVolumes([]VolumeSpec{
		{ID: "a", Mode: cloud.MultiNode, Size: mib, ReadOnly: true, Prepare: mark},
		{ID: "ro", Mode: cloud.MultiNode, Size: mib, ReadOnly: true, Prepare: fail}, // exists
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(prepared, []string{"a" + imageSuffix}) {
		t.Errorf("prepared %v, want a's image alone", prepared)
	}
	b, err := os.ReadFile(f.image("a"))
	if err != nil || len(b) != mib || string(b[4096:4096+8]) != "prepared" {
		t.Fatalf("a's image: %d bytes, %v; want %d bytes with the prepared content", len(b), err, mib)
	}
	for id, want := range map[cloud.VolumeID]bool{"a": true, "ro": true, "multi": false, "excl": false} {
		if ro, ok := f.c.VolumeReadOnly(id); !ok || ro != want {
			t.Errorf("VolumeReadOnly(%s) = %v, %v; want %v", id, ro, ok, want)
		}
	}
	if _, ok := f.c.VolumeReadOnly("nope"); ok {
		t.Error("VolumeReadOnly of a missing volume is ok")
	}
	dev := f.attach(t, "a", f.i1)
	if !sysReadOnly(t, dev) {
		t.Errorf("a's device %s is read-write", dev)
	}
}
