package csi

import (
	"context"
	"slices"
	"strings"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// Volumes of each mode, named after it, as tether's store would tell.
var (
	rwo = Access{Mode: cloud.Exclusive}
	rwx = Access{Mode: cloud.MultiNode}
	rox = Access{Mode: cloud.MultiNode, ReadOnly: true}

	accesses = map[cloud.VolumeID]Access{"rwo": rwo, "rwx": rwx, "rox": rox}
)

func accessOf(_ context.Context, v cloud.VolumeID) (Access, error) { return accesses[v], nil }

// sent is what the driver saw of one call: its access mode and readonly.
type sent struct {
	mode     spec.VolumeCapability_AccessMode_Mode
	readOnly bool
}

// callsOf lists what the driver saw of each call of method about vol.
func callsOf(d *csitest.Driver, method string, vol cloud.VolumeID) []sent {
	var out []sent
	for _, c := range d.Calls() {
		if c.Method == method && c.Volume == string(vol) {
			out = append(out, sent{c.Mode, c.ReadOnly})
		}
	}
	return out
}

// ValidateVolumeCapabilities and ControllerPublishVolume carry each
// mode's CSI access mode; only a ReadOnlyMany volume is published
// readonly, and only to a driver that offers PUBLISH_READONLY (the spec
// has the CO send false otherwise).
func TestAccessModesSent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noRO     bool // the driver lacks PUBLISH_READONLY
		vol      cloud.VolumeID
		mode     spec.VolumeCapability_AccessMode_Mode
		readOnly bool
	}{
		{"ReadWriteOnce", false, "rwo", spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false},
		{"ReadWriteMany", false, "rwx", spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, false},
		{"ReadOnlyMany", false, "rox", spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, true},
		{"ReadOnlyMany without PUBLISH_READONLY", true, "rox", spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := listByPage()
			cfg.NoPublishReadOnly = tc.noRO
			r := newRig(t, cfg, WithAccessModes(accessOf))
			ctx := t.Context()
			r.d.AddVolume(string(tc.vol))
			if err := r.p.Validate(ctx, tc.vol, accesses[tc.vol]); err != nil {
				t.Fatalf("Validate = %v", err)
			}
			insts := []cloud.InstanceID{id1, id2}
			if tc.vol == "rwo" {
				insts = []cloud.InstanceID{id1, id1} // again: idempotent
			}
			for _, inst := range insts {
				if _, err := r.p.Attach(ctx, tc.vol, inst); err != nil {
					t.Fatalf("Attach to %s = %v", inst, err)
				}
			}
			if got, want := callsOf(r.d, "ValidateVolumeCapabilities", tc.vol), []sent{{tc.mode, false}}; !slices.Equal(got, want) {
				t.Errorf("ValidateVolumeCapabilities sent %v, want %v", got, want)
			}
			want := sent{tc.mode, tc.readOnly}
			if got := callsOf(r.d, "ControllerPublishVolume", tc.vol); !slices.Equal(got, []sent{want, want}) {
				t.Errorf("ControllerPublishVolume sent %v, want %v twice", got, want)
			}
		})
	}
}

// A driver that does not support MULTI_NODE_READER_ONLY does not confirm
// a ReadOnlyMany volume: a terminal error naming the access mode and
// keeping the driver's reason. Its other modes are confirmed.
func TestValidateReaderOnlyRefused(t *testing.T) {
	cfg := listByPage()
	cfg.Unsupported = []spec.VolumeCapability_AccessMode_Mode{spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY}
	r := newRig(t, cfg)
	r.d.AddVolume("v1")
	err := r.p.Validate(t.Context(), "v1", rox)
	if cloud.Classify(err) != cloud.KindTerminal {
		t.Fatalf("Validate(ReadOnlyMany) = %v, want terminal", err)
	}
	for _, s := range []string{"MULTI_NODE_READER_ONLY", "does not confirm", "not supported"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q lacks %q", err, s)
		}
	}
	for _, a := range []Access{rwo, rwx} {
		if err := r.p.Validate(t.Context(), "v1", a); err != nil {
			t.Errorf("Validate(%s) = %v, want nil", a, err)
		}
	}
}
