package csitest

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// A raw block volume, as the spec has it: staged at a directory the CO
// made, published at a file the plugin makes in the CO's directory, and
// unpublished by removing that file.
func TestBlockVolume(t *testing.T) {
	d := New(Config{Nodes: map[string]int64{"node-1": 0}, StageUnstage: true})
	d.AddVolume("v")
	d.AddVolume("w")
	p := serve(t, d, "node-1")
	staging, parent := t.TempDir(), t.TempDir()
	target := parent + "/dev"
	b := use{cap: block()}
	pc, err := p.publish(t, "v", b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.stage(t, "v", staging, pc, b); err != nil {
		t.Fatal(err)
	}
	if got := d.Staged("v", "node-1"); !slices.Equal(got, []string{staging}) {
		t.Errorf("staged at %v", got)
	}
	if err := p.nodePublish(t, "v", staging, target, pc, b); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Fatalf("the target: %v, %v; want an empty file", fi, err)
	}
	wantCode(t, "publishing again", p.nodePublish(t, "v", staging, target, pc, b), codes.OK)
	wantCode(t, "publishing again as a mount", p.nodePublish(t, "v", staging, target, pc, use{cap: mount("ext4")}), codes.AlreadyExists)
	if got := d.Targets("v", "node-1"); !slices.Equal(got, []string{target}) {
		t.Errorf("published at %v", got)
	}
	if err := p.nodeUnpublish(t, "v", target); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target after unpublishing: %v", err)
	}
	if d.Targets("v", "node-1") != nil {
		t.Errorf("still published at %v", d.Targets("v", "node-1"))
	}
	var got []string
	for _, c := range d.Calls() {
		got = append(got, c.String())
	}
	want := []string{
		"ControllerPublishVolume v node node-1 SINGLE_NODE_WRITER block",
		"NodeStageVolume v node node-1 at " + staging + " SINGLE_NODE_WRITER block",
		"NodePublishVolume v node node-1 at " + target + " SINGLE_NODE_WRITER block staged at " + staging,
		"NodePublishVolume v node node-1 at " + target + " SINGLE_NODE_WRITER block staged at " + staging,
		"NodePublishVolume v node node-1 at " + target + " SINGLE_NODE_WRITER fs ext4 staged at " + staging,
		"NodeUnpublishVolume v node node-1 at " + target,
	}
	if !slices.Equal(got, want) {
		t.Errorf("calls\n%q\nwant\n%q", got, want)
	}

	// The target is the plugin's to create, its parent the CO's.
	pw, err := p.publish(t, "w", b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.stage(t, "w", t.TempDir(), pw, b); err != nil {
		t.Fatal(err)
	}
	stagingW := d.Staged("w", "node-1")[0]
	wantCode(t, "a directory at the target", p.nodePublish(t, "w", stagingW, parent, pw, b), codes.InvalidArgument)
	wantCode(t, "no parent", p.nodePublish(t, "w", stagingW, parent+"/no/dev", pw, b), codes.InvalidArgument)
	if got := d.Targets("w", "node-1"); got != nil {
		t.Errorf("w published at %v", got)
	}
}

// BlockOnly and MountOnly drivers refuse the other access type, in
// ValidateVolumeCapabilities (not confirmed, saying why) and in every call
// that takes a capability.
func TestAccessTypes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		capability *spec.VolumeCapability
		refused    bool
	}{
		{"any driver, mount", Config{}, mount("xfs"), false},
		{"any driver, block", Config{}, block(), false},
		{"block only, mount", Config{BlockOnly: true}, mount("xfs"), true},
		{"block only, block", Config{BlockOnly: true}, block(), false},
		{"mount only, block", Config{MountOnly: true}, block(), true},
		{"mount only, mount", Config{MountOnly: true}, mount("xfs"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Nodes, tc.cfg.StageUnstage = map[string]int64{"node-1": 0}, true
			d := New(tc.cfg)
			d.AddVolume("v")
			p := serve(t, d, "node-1")
			r, err := p.ctl.ValidateVolumeCapabilities(t.Context(), &spec.ValidateVolumeCapabilitiesRequest{
				VolumeId: "v", VolumeCapabilities: []*spec.VolumeCapability{tc.capability}})
			if err != nil || (r.GetConfirmed() == nil) != tc.refused || (r.GetMessage() == "") != !tc.refused {
				t.Errorf("ValidateVolumeCapabilities = %v, %v; want refused %v, saying why", r, err, tc.refused)
			}
			want := codes.OK
			if tc.refused {
				want = codes.InvalidArgument
			}
			for _, st := range chain(t, p, "v") {
				wantCode(t, st.method, st.call(use{cap: tc.capability}), want)
			}
			if got := len(d.Targets("v", "node-1")) + len(d.PublishedTo("v")); (got == 0) != tc.refused {
				t.Errorf("refused %v, yet %s", tc.refused, d.Describe())
			}
		})
	}
}

// Calls keep what a CO sent: access type, file system, mount flags,
// volume_context, the staging path of a publish, in String too.
func TestCallsRecorded(t *testing.T) {
	d := New(Config{Nodes: map[string]int64{"node-1": 0}, StageUnstage: true, VolumeContext: true})
	d.AddVolume("v")
	p := serve(t, d, "node-1")
	u := use{cap: mount("xfs", "noatime", "nodev"), vctx: d.VolumeContext("v")}
	steps := chain(t, p, "v")
	for _, st := range steps {
		if err := st.call(u); err != nil {
			t.Fatalf("%s: %v", st.method, err)
		}
	}
	calls := d.Calls()
	if len(calls) != len(steps) {
		t.Fatalf("calls %v", calls)
	}
	publish := calls[2]
	if publish.Staging == "" || publish.Staging != calls[1].Path || publish.Path != publish.Staging+"/target" {
		t.Errorf("NodePublishVolume recorded as staging %q, target %q; staged at %q", publish.Staging, publish.Path, calls[1].Path)
	}
	for _, c := range calls {
		if c.Block || c.FsType != "xfs" || !slices.Equal(c.MountFlags, []string{"noatime", "nodev"}) || !maps.Equal(c.VolumeContext, u.vctx) {
			t.Errorf("%s recorded as %#v", c.Method, c)
		}
	}
	want := "NodePublishVolume v node node-1 at " + publish.Path + " SINGLE_NODE_WRITER fs xfs flags noatime,nodev staged at " + publish.Staging
	if got := publish.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	blockCall := Call{Method: "ControllerPublishVolume", Volume: "v", Node: "n", Mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, ReadOnly: true, Block: true}
	if got, want := blockCall.String(), "ControllerPublishVolume v node n SINGLE_NODE_WRITER readonly block"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	calls[0].VolumeContext["x"], calls[0].MountFlags[0] = "y", "changed"
	if again := d.Calls()[0]; again.VolumeContext["x"] != "" || again.MountFlags[0] != "noatime" {
		t.Errorf("Calls shares its state with its caller: %#v", again)
	}
}
