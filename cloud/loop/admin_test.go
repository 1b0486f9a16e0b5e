package loop

import (
	"context"
	"errors"
	"os"
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
