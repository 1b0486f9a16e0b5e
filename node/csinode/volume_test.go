package csinode

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// A raw block volume on a driver that takes nothing else, demanding its
// volume_context and secrets: staged in a directory, published as a
// file the plugin makes (the Mounter makes its parent only), seen by
// Inspect and the agent's scan as any target, restarted on, and
// unpublished with the file gone.
func TestMounterBlockVolume(t *testing.T) {
	for _, stages := range []bool{true, false} {
		secrets := map[string]string{"token": "s3cret"}
		var d *csitest.Driver
		access := func(_ context.Context, v cloud.VolumeID) (cloudcsi.Access, error) {
			return cloudcsi.Access{Mode: cloud.Exclusive, Block: true, VolumeContext: d.VolumeContext(string(v)), SecretRef: "db", Secrets: secrets}, nil
		}
		r := newRig(t, csitest.Config{StageUnstage: stages, BlockOnly: true, RequireVolumeContext: true, RequireSecrets: secrets},
			cloudcsi.WithAccessModes(access))
		d = r.d
		l, err := layout.New(r.root)
		if err != nil {
			t.Fatal(err)
		}
		boot := "boot-1"
		// The node reads how the volume is used from the device path the
		// controller's publication returned (its secrets by name, from
		// the node's own store of them), not from Mode.
		m, err := NewMounter(r.n, l, MounterConfig{Plugin: plugin, BootID: func() string { return boot },
			Secrets: func(ref string) (cloudcsi.Secrets, error) {
				if ref != "db" {
					return nil, errors.New("no such secrets: " + ref)
				}
				return secrets, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		staging, target := paths(t, l)
		if err := m.Stage(r.attach(t, "v1"), staging); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(staging); err != nil || !fi.IsDir() {
			t.Errorf("stages %v: staging path: %v, %v; want a directory", stages, fi, err)
		}
		if err := m.Publish(staging, target, false); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("stages %v: target: %v, %v; want the plugin's file", stages, fi, err)
		}
		for _, c := range r.d.Calls() {
			if c.Method == "NodeStageVolume" || c.Method == "NodePublishVolume" {
				if !c.Block || !maps.Equal(c.VolumeContext, r.d.VolumeContext("v1")) || !slices.Equal(c.SecretKeys, []string{"token"}) {
					t.Errorf("%s sent %+v", c.Method, c)
				}
			}
		}
		if st, _, err := m.Inspect(target); err != nil || st != mount.Mounted {
			t.Errorf("Inspect(target) = %v, %v", st, err)
		}
		again, err := NewMounter(r.n, l, MounterConfig{Plugin: plugin, Mode: access, BootID: func() string { return boot }})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := scan(t, l, again), []string{"stage v1 mounted", "publish v1 mounted"}; !slices.Equal(got, want) {
			t.Errorf("stages %v: scan after a restart = %v, want %v", stages, got, want)
		}
		if err := again.Unpublish(target); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the target file is left: %v", err)
		}
		if err := again.Unstage(staging); err != nil {
			t.Fatal(err)
		}
		if got := scan(t, l, again); len(got) != 0 {
			t.Errorf("after teardown the scan finds %v", got)
		}
	}
}

// Unpublish removes a block volume's device file the plugin left behind
// (the fake removes its own; a plugin may not), never a directory with
// something in it.
func TestUnpublishRemovesLeftFile(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/target"
	if err := os.WriteFile(file, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := removeTarget("unpublish", file); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file left: %v", err)
	}
	if err := os.WriteFile(dir+"/data", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := removeTarget("unpublish", dir); err == nil || cloud.Classify(err) != cloud.KindRetryable {
		t.Errorf("removing a directory with data: %v, want a retryable refusal", err)
	}
	if err := removeTarget("unpublish", dir+"/missing"); err != nil {
		t.Errorf("nothing there: %v", err)
	}
}

// A publication whose secrets this node cannot read (no secrets
// directory, or the secrets' reader fails) sends nothing to the plugin.
func TestMounterSecretsUnreadableSendsNothing(t *testing.T) {
	access := func(context.Context, cloud.VolumeID) (cloudcsi.Access, error) {
		return cloudcsi.Access{Mode: cloud.Exclusive, SecretRef: "db"}, nil
	}
	r := newRig(t, csitest.Config{StageUnstage: true}, cloudcsi.WithAccessModes(access))
	l, err := layout.New(r.root)
	if err != nil {
		t.Fatal(err)
	}
	staging, _ := paths(t, l)
	dev := r.attach(t, "v1")
	for name, read := range map[string]func(string) (cloudcsi.Secrets, error){
		"no secrets directory": nil,
		"unreadable":           func(string) (cloudcsi.Secrets, error) { return nil, errors.New("mode 0644") },
	} {
		m, err := NewMounter(r.n, l, MounterConfig{Plugin: plugin, Secrets: read, BootID: func() string { return "b" }})
		if err != nil {
			t.Fatal(err)
		}
		calls := r.d.Count("NodeStageVolume", "")
		if err := m.Stage(dev, staging); err == nil {
			t.Errorf("%s: Stage succeeded", name)
		}
		if n := r.d.Count("NodeStageVolume", "") - calls; n != 0 {
			t.Errorf("%s: %d NodeStageVolume calls, want none", name, n)
		}
	}
}
