package agent

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

// SimCloud is what SimDevices asks of the sim cloud: a *sim.Cloud in the
// same process, a cloud/remote.Client of the one a tether cloud serve on
// the same machine holds (its content directories are this machine's).
type SimCloud interface {
	InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool)
	DeviceSource(inst cloud.InstanceID, devicePath string) (string, error)
	ContentDir() string
}

// SimDevices resolves device paths on a node backed by the sim cloud: the
// "device" of an attached volume is the directory holding its content,
// reachable only while the volume is attached to this node's instance. It
// checks the cloud's answer again before anything mounts it: a real
// directory right in the cloud's content root, reached through no symlink
// there (mount.CheckSourceIn).
type SimDevices struct {
	Cloud SimCloud
	Node  cloud.NodeName
	// Virtual: the cloud names content directories without making them
	// (sim.Config.VirtualContent), for a mounter that never reads its
	// source (mount.Memory); the on-disk check is skipped, the others
	// are not.
	Virtual bool
}

// Source implements Devices. It holds nothing: a volume's content
// directory is its own (the check that it is vol's cannot go stale).
func (d SimDevices) Source(_ context.Context, vol cloud.VolumeID, device string) (string, func(), error) {
	inst, ok := d.Cloud.InstanceOf(d.Node)
	if !ok {
		return "", noRelease, fmt.Errorf("node %s has no instance: %w", d.Node, cloud.ErrNotFound)
	}
	dir, err := d.Cloud.DeviceSource(inst, device)
	if err != nil {
		return "", noRelease, err
	}
	if got := cloud.VolumeID(filepath.Base(dir)); got != vol {
		return "", noRelease, fmt.Errorf("device %s on node %s holds volume %s, not %s: %w", device, d.Node, got, vol, cloud.ErrNotFound)
	}
	if d.Virtual {
		if filepath.Dir(dir) != filepath.Clean(d.Cloud.ContentDir()) {
			return "", noRelease, fmt.Errorf("device %s on node %s: %s is not right in %s: %w", device, d.Node, dir, d.Cloud.ContentDir(), mount.ErrUnsafeSource)
		}
		return dir, noRelease, nil
	}
	if err := mount.CheckSourceIn(d.Cloud.ContentDir(), dir); err != nil {
		return "", noRelease, fmt.Errorf("device %s on node %s: %w", device, d.Node, err)
	}
	return dir, noRelease, nil
}
