package csi

import (
	"context"
	"fmt"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
)

// Devices is the node agent's device resolution (node.Devices) over a
// CSI driver. The "device" the controller reported is the publish
// context (cloud/csi.DevicePath), and it is also what the Mounter stages
// from: Source hands it over as is, once it decodes and, if Published is
// set, once the controller plugin says the volume is published to this
// node's ID now. A stale device path (the volume detached meanwhile) is
// so refused before the node plugin is asked; a publish context left
// from an earlier publication of the same volume to this node is the
// node plugin's to refuse (it finds no such device).
type Devices struct {
	Node *Node
	// Published asks the controller side whether vol is published to the
	// node ID inst (nil: no check).
	Published func(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (bool, error)
}

// Source implements node.Devices. It holds nothing: the node plugin
// refuses a publish context that went stale.
func (d Devices) Source(ctx context.Context, vol cloud.VolumeID, device string) (string, func(), error) {
	if _, err := cloudcsi.PublishContext(device); err != nil {
		return "", nop, err
	}
	if d.Published == nil {
		return device, nop, nil
	}
	id := d.Node.ID()
	ok, err := d.Published(ctx, vol, id)
	if err != nil {
		return "", nop, fmt.Errorf("csi: asking whether volume %s is published to node %s: %w", vol, id, err)
	}
	if !ok {
		return "", nop, fmt.Errorf("csi: volume %s is not published to this node (%s), says the controller plugin: not staging it: %w", vol, id, cloud.ErrNotFound)
	}
	return device, nop, nil
}

func nop() {}
