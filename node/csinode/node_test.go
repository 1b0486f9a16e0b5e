package csinode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/cloud/csi/csitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a fake driver whose controller plugin and node plugin (node-1,
// at most 2 volumes) listen on two sockets, as on a real cluster, with a
// controller Provider (of opts) and a Node dialled to them; all stop in
// t.Cleanup.
type rig struct {
	d    *csitest.Driver
	p    *cloudcsi.Provider
	n    *Node
	root string // the node's data directory
}

func newRig(t *testing.T, cfg csitest.Config, opts ...cloudcsi.Option) *rig {
	t.Helper()
	cfg.Nodes = map[string]int64{"node-1": 2}
	cfg.List, cfg.ListPublished = true, true
	d := csitest.New(cfg)
	ctlSocket, nodeSocket := d.Serve(t, ""), d.Serve(t, "node-1")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	n, err := DialNode(ctx, nodeSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	p, err := cloudcsi.Dial(ctx, ctlSocket, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// What the wiring does: the agent reports its plugin's node ID.
	if err := p.SetNodeID("n1", n.ID()); err != nil {
		t.Fatal(err)
	}
	return &rig{d: d, p: p, n: n, root: t.TempDir()}
}

// attach attaches vol to the node through the controller: the device path
// the agent would be told.
func (r *rig) attach(t *testing.T, vol cloud.VolumeID) string {
	t.Helper()
	r.d.AddVolume(string(vol))
	inst, err := r.p.InstanceID(t.Context(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := r.p.Attach(t.Context(), vol, inst)
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func TestDialNode(t *testing.T) {
	for _, stages := range []bool{true, false} {
		r := newRig(t, csitest.Config{StageUnstage: stages})
		if r.n.ID() != "node-1" || r.n.MaxVolumes() != 2 || r.n.StagesVolumes() != stages || r.n.Plugin().Name != "csi.tether.test" {
			t.Errorf("node: ID %q, max %d, stages %v (want %v), plugin %+v", r.n.ID(), r.n.MaxVolumes(), r.n.StagesVolumes(), stages, r.n.Plugin())
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stages bool
	}{{"stage and publish", true}, {"publish only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, csitest.Config{StageUnstage: tc.stages})
			ctx := t.Context()
			dev := r.attach(t, "v1")
			staging := filepath.Join(r.root, "plugins", "csi", "v1")      // made by Stage
			target := filepath.Join(r.root, "pods", "uid1", "vols", "v1") // its parent by Publish, itself by the plugin
			var wantStaged []string
			if tc.stages {
				wantStaged = []string{staging}
			}

			for range 2 { // every step twice: idempotent
				if err := r.n.Stage(ctx, "v1", dev, staging, cloudcsi.Access{}); err != nil {
					t.Fatal(err)
				}
				if got := r.d.Staged("v1", "node-1"); !slices.Equal(got, wantStaged) {
					t.Errorf("staged at %v, want %v", got, wantStaged)
				}
				if err := r.n.Publish(ctx, "v1", dev, staging, target, false, cloudcsi.Access{}); err != nil {
					t.Fatal(err)
				}
				if got := r.d.Targets("v1", "node-1"); !slices.Equal(got, []string{target}) {
					t.Errorf("published at %v", got)
				}
				if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
					t.Errorf("target: %v", err)
				}
			}
			for range 2 {
				if err := r.n.Unpublish(ctx, "v1", target); err != nil {
					t.Fatal(err)
				}
				if got := r.d.Targets("v1", "node-1"); len(got) != 0 {
					t.Errorf("still published at %v", got)
				}
				if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("target after Unpublish: %v", err)
				}
				if err := r.n.Unstage(ctx, "v1", staging); err != nil {
					t.Fatal(err)
				}
				if got := r.d.Staged("v1", "node-1"); len(got) != 0 {
					t.Errorf("still staged at %v", got)
				}
				if _, err := os.Stat(staging); tc.stages && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("staging directory after Unstage: %v", err)
				}
			}
			if err := r.p.Detach(ctx, "v1", r.n.ID()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The plugin gets the publish context the attach returned: one from
// another attach, or none, does not stage.
func TestStageNeedsThePublishContext(t *testing.T) {
	r := newRig(t, csitest.Config{StageUnstage: true})
	ctx := t.Context()
	r.attach(t, "v1")
	devOther := r.attach(t, "v2")
	staging := filepath.Join(r.root, "staging", "v1")
	if err := r.n.Stage(ctx, "v1", devOther, staging, cloudcsi.Access{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Stage with v2's device = %v, want the plugin's refusal", err)
	}
	if err := r.n.Stage(ctx, "v1", cloudcsi.DevicePath(nil), staging, cloudcsi.Access{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Stage with an empty context = %v, want the plugin's refusal", err)
	}
	// Not a CSI device path: refused before anything is sent or made.
	if err := r.n.Stage(ctx, "v1", "/dev/xvdf", filepath.Join(r.root, "never"), cloudcsi.Access{}); cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("Stage with /dev/xvdf = %v, want terminal", err)
	}
	if _, err := os.Stat(filepath.Join(r.root, "never")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Stage made its directory: %v", err)
	}
}

func TestTeardownOfUnknownVolume(t *testing.T) {
	r := newRig(t, csitest.Config{StageUnstage: true})
	ctx := t.Context()
	if err := r.n.Unpublish(ctx, "gone", filepath.Join(r.root, "t")); err != nil {
		t.Errorf("Unpublish of an unknown volume = %v, want nil", err)
	}
	if err := r.n.Unstage(ctx, "gone", filepath.Join(r.root, "s")); err != nil {
		t.Errorf("Unstage of an unknown volume = %v, want nil", err)
	}
}

func TestNodeErrorsClassified(t *testing.T) {
	cfg := csitest.Config{StageUnstage: true, Before: func(_ context.Context, m string) error {
		if m == "NodeStageVolume" {
			return status.Error(codes.ResourceExhausted, "no room")
		}
		return nil
	}}
	r := newRig(t, cfg)
	ctx := t.Context()
	dev := r.attach(t, "v1")
	if err := r.n.Stage(ctx, "v1", dev, filepath.Join(r.root, "s"), cloudcsi.Access{}); cloud.Classify(err) != cloud.KindLimitReached {
		t.Errorf("Stage = %v, want limit reached", err)
	}
	err := r.n.Publish(ctx, "nope", dev, "", filepath.Join(r.root, "t", "nope"), false, cloudcsi.Access{})
	if cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("Publish of an unknown volume = %v, want not found", err)
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.n.Unpublish(done, "v1", filepath.Join(r.root, "t")); !errors.Is(err, context.Canceled) {
		t.Errorf("Unpublish with a done ctx = %v, want context.Canceled", err)
	}
}
