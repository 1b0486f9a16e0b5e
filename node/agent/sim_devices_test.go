package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

// stubCloud is a SimCloud other than *sim.Cloud (as a cloud/remote.Client
// is): node n1 on instance i-1, whose device /dev/xvdba holds vol-a.
type stubCloud struct{ content string }

func (s stubCloud) InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool) {
	return "i-1", node == "n1"
}

func (s stubCloud) DeviceSource(inst cloud.InstanceID, dev string) (string, error) {
	if inst != "i-1" || dev != "/dev/xvdba" {
		return "", cloud.ErrNotFound
	}
	return filepath.Join(s.content, "vol-a"), nil
}

func (s stubCloud) ContentDir() string { return s.content }

// TestSimDevicesAnyCloud: SimDevices works with any SimCloud, and still
// checks its answers.
func TestSimDevicesAnyCloud(t *testing.T) {
	content := t.TempDir()
	if err := os.Mkdir(filepath.Join(content, "vol-a"), 0o750); err != nil {
		t.Fatal(err)
	}
	d := SimDevices{Cloud: stubCloud{content: content}, Node: "n1"}
	ctx := context.Background()
	if got, err := sourceNow(ctx, d, "vol-a", "/dev/xvdba"); err != nil || got != filepath.Join(content, "vol-a") {
		t.Errorf("Source = %q, %v; want vol-a's directory", got, err)
	}
	if _, err := sourceNow(ctx, d, "vol-b", "/dev/xvdba"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("Source of another volume at that device: %v, want not found", err)
	}
	if _, err := sourceNow(ctx, SimDevices{Cloud: stubCloud{content: content}, Node: "n2"}, "vol-a", "/dev/xvdba"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("Source on a node without an instance: %v, want not found", err)
	}
	// A cloud whose content root is not where the answer lies is refused.
	elsewhere := SimDevices{Cloud: rootedAt{stubCloud{content: content}, t.TempDir()}, Node: "n1"}
	if _, err := sourceNow(ctx, elsewhere, "vol-a", "/dev/xvdba"); !errors.Is(err, mount.ErrUnsafeSource) {
		t.Errorf("Source outside the content root: %v, want mount.ErrUnsafeSource", err)
	}
}

// rootedAt is a SimCloud claiming another content root.
type rootedAt struct {
	stubCloud
	root string
}

func (r rootedAt) ContentDir() string { return r.root }

// TestSimDevicesVirtual: a cloud that names contents without making them
// is answered without a look at the disk, and still only for the volume
// the device holds, right in the content root.
func TestSimDevicesVirtual(t *testing.T) {
	content := filepath.Join(t.TempDir(), "never-made")
	ctx := context.Background()
	d := SimDevices{Cloud: stubCloud{content: content}, Node: "n1", Virtual: true}
	if got, err := sourceNow(ctx, d, "vol-a", "/dev/xvdba"); err != nil || got != filepath.Join(content, "vol-a") {
		t.Errorf("Source = %q, %v; want vol-a's directory named", got, err)
	}
	if _, err := sourceNow(ctx, d, "vol-b", "/dev/xvdba"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("Source of another volume at that device: %v, want not found", err)
	}
	elsewhere := SimDevices{Cloud: rootedAt{stubCloud{content: content}, t.TempDir()}, Node: "n1", Virtual: true}
	if _, err := sourceNow(ctx, elsewhere, "vol-a", "/dev/xvdba"); !errors.Is(err, mount.ErrUnsafeSource) {
		t.Errorf("Source outside the content root: %v, want mount.ErrUnsafeSource", err)
	}
	if _, err := sourceNow(ctx, SimDevices{Cloud: stubCloud{content: content}, Node: "n1"}, "vol-a", "/dev/xvdba"); err == nil {
		t.Error("Source of a directory that does not exist, not virtual: accepted")
	}
}
