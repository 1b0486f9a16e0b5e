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

func TestCapability(t *testing.T) {
	for _, tc := range []struct {
		mode   cloud.AccessMode
		fs     string
		want   spec.VolumeCapability_AccessMode_Mode
		wantFs string
	}{
		{cloud.Exclusive, "", spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ext4"},
		{cloud.MultiNode, "", spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "ext4"},
		{cloud.Exclusive, "xfs", spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "xfs"},
	} {
		c := Capability(tc.mode, tc.fs)
		if c.GetAccessMode().GetMode() != tc.want || c.GetMount().GetFsType() != tc.wantFs {
			t.Errorf("Capability(%v, %q) = %v", tc.mode, tc.fs, c)
		}
	}
}
