package node

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// SimDevices resolves device paths on a node backed by the sim cloud: the
// "device" of an attached volume is the directory holding its content,
// reachable only while the volume is attached to this node's instance.
type SimDevices struct {
	Cloud *sim.Cloud
	Node  cloud.NodeName
}

// Source implements Devices.
func (d SimDevices) Source(_ context.Context, vol cloud.VolumeID, device string) (string, error) {
	inst, ok := d.Cloud.InstanceOf(d.Node)
	if !ok {
		return "", fmt.Errorf("node %s has no instance: %w", d.Node, cloud.ErrNotFound)
	}
	dir, err := d.Cloud.DeviceSource(inst, device)
	if err != nil {
		return "", err
	}
	if got := cloud.VolumeID(filepath.Base(dir)); got != vol {
		return "", fmt.Errorf("device %s on node %s holds volume %s, not %s: %w", device, d.Node, got, vol, cloud.ErrNotFound)
	}
	return dir, nil
}
