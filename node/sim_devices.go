package node

import (
	"context"
	"fmt"

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
func (d SimDevices) Source(_ context.Context, device string) (string, error) {
	inst, ok := d.Cloud.InstanceOf(d.Node)
	if !ok {
		return "", fmt.Errorf("node %s has no instance: %w", d.Node, cloud.ErrNotFound)
	}
	return d.Cloud.DeviceSource(inst, device)
}
