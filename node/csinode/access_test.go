package csinode

import (
	"context"
	"slices"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/node/layout"
)

// sent is what the driver saw of one call: method, access mode, readonly.
type sent struct {
	method   string
	mode     spec.VolumeCapability_AccessMode_Mode
	readOnly bool
}

// The controller and the node ask for the same capability, the one of
// the volume's mode: SINGLE_NODE_WRITER for ReadWriteOnce,
// MULTI_NODE_MULTI_WRITER for ReadWriteMany, MULTI_NODE_READER_ONLY for
// ReadOnlyMany. A ReadOnlyMany volume is published readonly by the
// controller and on the node, whatever the use asks; the others as the
// use asks on the node, read-write by the controller.
func TestMounterAccessModes(t *testing.T) {
	const (
		rwoMode = spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
		rwxMode = spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		roxMode = spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	)
	for _, tc := range []struct {
		name      string
		access    cloudcsi.Access
		asked     bool // the use's read-only
		mode      spec.VolumeCapability_AccessMode_Mode
		published bool // ControllerPublishVolume's readonly
		mounted   bool // NodePublishVolume's readonly
	}{
		{"ReadWriteOnce", cloudcsi.Access{Mode: cloud.Exclusive}, false, rwoMode, false, false},
		{"ReadWriteOnce used read-only", cloudcsi.Access{Mode: cloud.Exclusive}, true, rwoMode, false, true},
		{"ReadWriteMany", cloudcsi.Access{Mode: cloud.MultiNode}, false, rwxMode, false, false},
		{"ReadOnlyMany", cloudcsi.Access{Mode: cloud.MultiNode, ReadOnly: true}, true, roxMode, true, true},
		{"ReadOnlyMany used read-write", cloudcsi.Access{Mode: cloud.MultiNode, ReadOnly: true}, false, roxMode, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			access := func(context.Context, cloud.VolumeID) (cloudcsi.Access, error) { return tc.access, nil }
			r := newRig(t, csitest.Config{StageUnstage: true}, cloudcsi.WithAccessModes(access))
			l, err := layout.New(r.root)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewMounter(r.n, l, MounterConfig{Plugin: plugin, Mode: access})
			if err != nil {
				t.Fatal(err)
			}
			staging, target := paths(t, l)
			if err := m.Stage(r.attach(t, "v1"), staging); err != nil {
				t.Fatal(err)
			}
			if err := m.Publish(staging, target, tc.asked); err != nil {
				t.Fatal(err)
			}
			var got []sent
			for _, c := range r.d.Calls() {
				got = append(got, sent{c.Method, c.Mode, c.ReadOnly})
			}
			want := []sent{
				{"ControllerPublishVolume", tc.mode, tc.published},
				{"NodeStageVolume", tc.mode, false},
				{"NodePublishVolume", tc.mode, tc.mounted},
			}
			if !slices.Equal(got, want) {
				t.Errorf("the driver got %v, want %v", got, want)
			}
		})
	}
}
