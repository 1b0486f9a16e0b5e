package csinode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

const plugin = "tether-csi"

// paths are volume v1's staging path and workload uid1's target of it.
func paths(t *testing.T, l layout.Layout) (staging, target string) {
	t.Helper()
	staging, err := l.GlobalMount(plugin, "v1")
	if err != nil {
		t.Fatal(err)
	}
	target, err = l.PodVolume("uid1", plugin, "v1")
	if err != nil {
		t.Fatal(err)
	}
	return staging, target
}

// mounter is a Mounter over the rig's node plugin for the rig's data
// directory, in the boot *boot.
func (r *rig) mounter(t *testing.T, boot *string) (*Mounter, layout.Layout) {
	t.Helper()
	l, err := layout.New(r.root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMounter(r.n, l, MounterConfig{Plugin: plugin, BootID: func() string { return *boot }})
	if err != nil {
		t.Fatal(err)
	}
	return m, l
}

// scan is what the agent reads back at start, by kind, as "kind state".
func scan(t *testing.T, l layout.Layout, m mount.Mounter) []string {
	t.Helper()
	found, err := mount.Scan(l, m)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range found.Entries {
		out = append(out, e.Kind+" "+e.Volume+" "+e.State.String())
	}
	return out
}

// The agent's four operations reach the plugin at the layout's paths, as
// often as the agent asks and no more; Inspect and the scan follow.
func TestMounterRoundTrip(t *testing.T) {
	for _, stages := range []bool{true, false} {
		r := newRig(t, csitest.Config{StageUnstage: stages})
		boot := "boot-1"
		m, l := r.mounter(t, &boot)
		staging, target := paths(t, l)
		dev := r.attach(t, "v1")

		if err := m.Stage(dev, staging); err != nil {
			t.Fatal(err)
		}
		if err := m.Publish(staging, target, false); err != nil {
			t.Fatal(err)
		}
		if got, want := r.d.Targets("v1", "node-1"), []string{target}; !slices.Equal(got, want) {
			t.Errorf("stages %v: published at %v, want %v", stages, got, want)
		}
		if stages && !slices.Equal(r.d.Staged("v1", "node-1"), []string{staging}) {
			t.Errorf("staged at %v, want %s", r.d.Staged("v1", "node-1"), staging)
		}
		if got, want := scan(t, l, m), []string{"stage v1 mounted", "publish v1 mounted"}; !slices.Equal(got, want) {
			t.Errorf("stages %v: scan %v, want %v", stages, got, want)
		}
		if st, src, err := m.Inspect(target); st != mount.Mounted || src != staging || err != nil {
			t.Errorf("Inspect(target) = %s, %q, %v", st, src, err)
		}
		if st, src, _ := m.Inspect(staging); st != mount.Mounted || src != dev {
			t.Errorf("Inspect(staging) = %s, %q; want mounted from the device", st, src)
		}

		if err := m.Unpublish(target); err != nil {
			t.Fatal(err)
		}
		if err := m.Unstage(staging); err != nil {
			t.Fatal(err)
		}
		if len(r.d.Targets("v1", "node-1")) != 0 || len(r.d.Staged("v1", "node-1")) != 0 {
			t.Errorf("stages %v: still published or staged: %s", stages, r.d.Describe())
		}
		if got := scan(t, l, m); len(got) != 0 {
			t.Errorf("stages %v: scan after teardown: %v", stages, got)
		}
		want := map[string]int{"NodePublishVolume": 1, "NodeUnpublishVolume": 1}
		if stages {
			want["NodeStageVolume"], want["NodeUnstageVolume"] = 1, 1
		}
		for method, n := range want {
			if got := r.d.Count(method, "v1"); got != n {
				t.Errorf("stages %v: %d %s calls, want %d", stages, got, method, n)
			}
		}
		if st := readState(t, r.root); len(st.Targets) != 0 {
			t.Errorf("records left: %v", st.Targets)
		}
	}
}

func readState(t *testing.T, root string) state {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A restarted agent (a new Mounter on the same directory) reads back what
// the plugin mounted, asking the plugin nothing; a machine that rebooted
// finds every mount half-done, and the agent's repeat redoes it.
func TestMounterReconstruction(t *testing.T) {
	r := newRig(t, csitest.Config{StageUnstage: true})
	boot := "boot-1"
	m, l := r.mounter(t, &boot)
	staging, target := paths(t, l)
	dev := r.attach(t, "v1")
	if err := m.Stage(dev, staging); err != nil {
		t.Fatal(err)
	}
	if err := m.Publish(staging, target, true); err != nil {
		t.Fatal(err)
	}
	calls := len(r.d.Calls())

	again, _ := r.mounter(t, &boot)
	if got, want := scan(t, l, again), []string{"stage v1 mounted", "publish v1 mounted"}; !slices.Equal(got, want) {
		t.Errorf("after a restart: %v, want %v", got, want)
	}
	if len(r.d.Calls()) != calls {
		t.Errorf("reading back called the plugin: %v", r.d.Calls()[calls:])
	}

	boot = "boot-2"
	rebooted, _ := r.mounter(t, &boot)
	if got, want := scan(t, l, rebooted), []string{"stage v1 partial", "publish v1 partial"}; !slices.Equal(got, want) {
		t.Errorf("after a reboot: %v, want %v", got, want)
	}
	if err := rebooted.Stage(dev, staging); err != nil {
		t.Fatal(err)
	}
	if err := rebooted.Publish(staging, target, true); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, l, rebooted); !slices.Equal(got, []string{"stage v1 mounted", "publish v1 mounted"}) {
		t.Errorf("redone after the reboot: %v", got)
	}
}

// The record is written, not done, before the plugin is asked, so a crash
// during the call leaves a Partial target, never a Mounted one the plugin
// never made nor an Absent one it did; a failed call leaves it Partial,
// and the next try completes it.
func TestMounterRecordsBeforeCalling(t *testing.T) {
	var fail atomic.Bool
	var seen, root atomic.Value
	cfg := csitest.Config{StageUnstage: true, Before: func(_ context.Context, method string) error {
		if method == "NodeStageVolume" {
			if b, err := os.ReadFile(filepath.Join(root.Load().(string), StateFile)); err == nil {
				seen.Store(string(b))
			}
			if fail.Load() {
				return status.Error(codes.Internal, "device busy")
			}
		}
		return nil
	}}
	r := newRig(t, cfg)
	root.Store(r.root)
	boot := ""
	m, l := r.mounter(t, &boot)
	staging, target := paths(t, l)
	dev := r.attach(t, "v1")

	fail.Store(true)
	if err := m.Stage(dev, staging); cloud.Classify(err) != cloud.KindRetryable {
		t.Fatalf("Stage = %v, want the plugin's retryable failure", err)
	}
	var during state
	if s, _ := seen.Load().(string); json.Unmarshal([]byte(s), &during) != nil || during.Targets["plugins/tether-csi/mounts/v1"] != (record{Kind: kindStage, Volume: "v1", Device: dev}) {
		t.Errorf("the state file during NodeStageVolume: %q, want v1's stage recorded not done", s)
	}
	if st, _, _ := m.Inspect(staging); st != mount.Partial {
		t.Errorf("after a failed stage: %s, want partial", st)
	}
	if err := m.Publish(staging, target, false); cloud.Classify(err) != cloud.KindRetryable || r.d.Count("NodePublishVolume", "") != 0 {
		t.Errorf("Publish before the stage completed = %v, want a retryable refusal, nothing sent", err)
	}
	fail.Store(false)
	if err := m.Stage(dev, staging); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := m.Inspect(staging); st != mount.Mounted {
		t.Errorf("after the retry: %s, want mounted", st)
	}
}

// Paths that are not the plugin's targets are refused before anything is
// made or sent; so is a target reached through a symlink.
func TestMounterRefusesOtherPaths(t *testing.T) {
	r := newRig(t, csitest.Config{StageUnstage: true})
	boot := ""
	m, l := r.mounter(t, &boot)
	dev := r.attach(t, "v1")
	other, _ := l.GlobalMount("tether-sim", "v1")
	pod, _ := l.PodVolume("uid1", plugin, "v1")
	for _, p := range []string{other, pod, filepath.Join(r.root, "..", "x"), "/tmp/x", filepath.Join(r.root, "plugins", plugin, "mounts", "..bad")} {
		if err := m.Stage(dev, p); !errors.Is(err, mount.ErrOutside) {
			t.Errorf("Stage at %s = %v, want ErrOutside", p, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(r.root, "elsewhere"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(r.root, "elsewhere"), filepath.Join(r.root, "plugins")); err != nil {
		t.Fatal(err)
	}
	staging, _ := paths(t, l)
	if err := m.Stage(dev, staging); !errors.Is(err, mount.ErrOutside) {
		t.Errorf("Stage through a symlink = %v, want ErrOutside", err)
	}
	if n := len(r.d.Calls()); n != 1 { // the attach's ControllerPublishVolume
		t.Errorf("the plugin was asked: %v", r.d.Calls())
	}
}

// Devices hands the publish context over as it came, asking the
// controller plugin nothing (the agent stages on tether's handshake), and
// refuses a device path that is no publish context.
func TestDevices(t *testing.T) {
	r := newRig(t, csitest.Config{StageUnstage: true})
	dev := r.attach(t, "v1")
	calls := len(r.d.Calls())
	d := Devices{}
	if src, err := sourceNow(t.Context(), d, "v1", dev); err != nil || src != dev {
		t.Errorf("Source = %q, %v; want the device path", src, err)
	}
	if _, err := sourceNow(t.Context(), d, "v1", "/dev/xvdf"); cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("Source of a non-CSI device = %v, want terminal", err)
	}
	if got := r.d.Calls()[calls:]; len(got) != 0 {
		t.Errorf("Source made driver calls %v, want none", got)
	}
}

// sourceNow is d.Source with its source released at once.
func sourceNow(ctx context.Context, d Devices, vol cloud.VolumeID, dev string) (string, error) {
	src, release, err := d.Source(ctx, vol, dev)
	release()
	return src, err
}
