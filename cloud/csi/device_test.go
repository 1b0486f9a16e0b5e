package csi

import (
	"maps"
	"strings"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
)

func TestDevicePathRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		pc   map[string]string
	}{
		{"nil", nil},
		{"empty", map[string]string{}},
		{"device", map[string]string{"devicePath": "/dev/xvdf"}},
		{"several", map[string]string{"devicePath": "/dev/sdb", "lun": "3", "odd": "a:b/c=d\x00é"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := DevicePath(tc.pc)
			if !strings.HasPrefix(dev, DevicePrefix) || dev == DevicePrefix {
				t.Fatalf("DevicePath = %q", dev)
			}
			if strings.ContainsAny(dev[len(DevicePrefix):], "/+=: \n") {
				t.Errorf("DevicePath = %q: not plain URL-safe base64", dev)
			}
			got, err := PublishContext(dev)
			if err != nil || !maps.Equal(got, tc.pc) || got == nil {
				t.Errorf("PublishContext(%q) = %v, %v; want %v", dev, got, err, tc.pc)
			}
			if again := DevicePath(maps.Clone(tc.pc)); again != dev {
				t.Errorf("DevicePath is not deterministic: %q then %q", dev, again)
			}
		})
	}
}

func TestPublishContextRefuses(t *testing.T) {
	for _, dev := range []string{"", "/dev/xvdf", "csi:***", "csi:" + "bm90IGpzb24", "csi:WzFd" /* [1] */} {
		if pc, err := PublishContext(dev); err == nil || cloud.Classify(err) != cloud.KindTerminal {
			t.Errorf("PublishContext(%q) = %v, %v; want a terminal error", dev, pc, err)
		}
	}
}

// ReadWriteOnce is SINGLE_NODE_WRITER, ReadWriteMany
// MULTI_NODE_MULTI_WRITER, ReadOnlyMany MULTI_NODE_READER_ONLY; read-only
// means nothing for an exclusive volume (tether has no such mode).
func TestCapability(t *testing.T) {
	for _, tc := range []struct {
		a      Access
		fs     string
		want   spec.VolumeCapability_AccessMode_Mode
		wantFs string
	}{
		{Access{Mode: cloud.Exclusive}, "", spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ext4"},
		{Access{Mode: cloud.MultiNode}, "", spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "ext4"},
		{Access{Mode: cloud.MultiNode, ReadOnly: true}, "", spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, "ext4"},
		{Access{Mode: cloud.Exclusive, ReadOnly: true}, "", spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ext4"},
		{Access{Mode: cloud.Exclusive}, "xfs", spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "xfs"},
	} {
		c := Capability(tc.a, tc.fs)
		if c.GetAccessMode().GetMode() != tc.want || c.GetMount().GetFsType() != tc.wantFs {
			t.Errorf("Capability(%+v, %q) = %v", tc.a, tc.fs, c)
		}
		if tc.a.ReadOnlyMany() != (tc.want == spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY) {
			t.Errorf("%+v: ReadOnlyMany() = %v", tc.a, tc.a.ReadOnlyMany())
		}
	}
}
