package csi

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
)

// A device path of DevicePathFor carries the publish context and how the
// volume is used, its secrets by name only; one of DevicePath carries
// the context alone; anything else is refused.
func TestDevicePathCarriesAccess(t *testing.T) {
	pc := map[string]string{"devicePath": "/dev/xvdf"}
	a := Access{Mode: cloud.MultiNode, ReadOnly: true, Block: true, FsType: "xfs", MountFlags: []string{"noatime"},
		VolumeContext: map[string]string{"share": "s1"}, SecretRef: "db", Secrets: Secrets{"password": "hunter2"}}
	dev := DevicePathFor(pc, a)
	if !strings.HasPrefix(dev, CarryingPrefix) {
		t.Fatalf("DevicePathFor = %q, want the prefix %q", dev, CarryingPrefix)
	}
	if dev != DevicePathFor(maps.Clone(pc), a) {
		t.Error("the same publication gives another path")
	}
	got, err := PublishContext(dev)
	if err != nil || !maps.Equal(got, pc) {
		t.Errorf("PublishContext = %v, %v; want %v", got, err, pc)
	}
	back, ok, err := DeviceAccess(dev)
	if err != nil || !ok {
		t.Fatalf("DeviceAccess = %v, %v", ok, err)
	}
	if back.Mode != a.Mode || back.ReadOnly != a.ReadOnly || back.Block != a.Block || back.FsType != a.FsType ||
		!slices.Equal(back.MountFlags, a.MountFlags) || !maps.Equal(back.VolumeContext, a.VolumeContext) || back.SecretRef != "db" {
		t.Errorf("DeviceAccess = %#v, want %#v", back, a)
	}
	if back.Secrets != nil {
		t.Errorf("a device path carried secrets: %d", len(back.Secrets))
	}
	for _, enc := range []string{dev, DevicePath(pc)} {
		if strings.Contains(enc, "hunter2") {
			t.Errorf("%q holds a secret", enc)
		}
	}
	if _, ok, err := DeviceAccess(DevicePath(pc)); ok || err != nil {
		t.Errorf("DeviceAccess of an earlier device path = %v, %v; want none carried, no error", ok, err)
	}
	for _, bad := range []string{"/dev/xvdf", CarryingPrefix + "!!", CarryingPrefix + "bm90IGpzb24", DevicePathFor(pc, Access{Mode: 7})} {
		if _, _, err := DeviceAccess(bad); cloud.Classify(err) != cloud.KindTerminal {
			t.Errorf("DeviceAccess(%q) = %v, want a terminal error", bad, err)
		}
	}
}
