package process

import (
	"slices"
	"strings"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud/csi/csitest"
)

// roxCall is what the driver saw of a call about a volume: method, access
// mode, readonly.
type roxCall struct {
	method   string
	mode     spec.VolumeCapability_AccessMode_Mode
	readOnly bool
}

// A ReadOnlyMany volume applied through the API is checked, published,
// staged and mounted as MULTI_NODE_READER_ONLY, and published readonly
// by the controller and to every workload, whichever its use asks.
func TestCSIReadOnlyMany(t *testing.T) {
	r := newCSIRig(t, csitest.Config{})
	_, _, apply := loopClient(t, r.e)
	r.d.AddVolume("shared")
	if err := apply(volumeDoc("shared", "ReadOnlyMany"),
		workloadDoc("reader", csiNode, "shared", true), workloadDoc("writer", csiNode, "shared", false)); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "shared served to both", func() bool { return r.served(t, "shared", "reader", "writer") })
	ro := spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	want := []roxCall{
		{"ValidateVolumeCapabilities", ro, false},
		{"ControllerPublishVolume", ro, true},
		{"NodeStageVolume", ro, false},
		{"NodePublishVolume", ro, true},
		{"NodePublishVolume", ro, true},
	}
	var got []roxCall
	for _, call := range r.d.Calls() {
		if call.Volume == "shared" && call.Method != "ControllerGetVolume" {
			got = append(got, roxCall{call.Method, call.Mode, call.ReadOnly})
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the driver got %v, want %v", got, want)
	}
}

// A driver that does not support MULTI_NODE_READER_ONLY refuses the
// apply of a ReadOnlyMany volume, saying which capability it did not
// confirm and why; nothing is published, and the volume is not taken on.
func TestCSIReadOnlyManyRefused(t *testing.T) {
	r := newCSIRig(t, csitest.Config{Unsupported: []spec.VolumeCapability_AccessMode_Mode{spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY}})
	_, _, apply := loopClient(t, r.e)
	r.d.AddVolume("shared")
	err := apply(volumeDoc("shared", "ReadOnlyMany"))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("apply = %v, want InvalidArgument", err)
	}
	for _, s := range []string{`volume "shared" cannot be used ReadOnlyMany`, "MULTI_NODE_READER_ONLY", "does not confirm", "not supported"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q lacks %q", err, s)
		}
	}
	if _, ok, _ := r.e.Store.Volume("shared"); ok {
		t.Error("the refused volume is in the store")
	}
	if n := r.d.Count("ControllerPublishVolume", "shared"); n != 0 {
		t.Errorf("the driver was asked to publish it %d times", n)
	}
	// ReadWriteMany, which the driver supports, is accepted.
	if err := apply(volumeDoc("shared", "ReadWriteMany")); err != nil {
		t.Errorf("apply as ReadWriteMany = %v", err)
	}
}
