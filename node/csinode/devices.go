package csinode

import (
	"context"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
)

// Devices is the node agent's device resolution (agent.Devices) over a
// CSI driver. The "device" the controller reported is the publish
// context (cloud/csi.DevicePath), and it is also what the Mounter stages
// from: Source hands it over as is once it decodes. It asks the
// controller plugin nothing: the agent stages on tether's own handshake
// (the node status lists the volume attached to this node, I3), as the
// kubelet waits for the attach/detach controller's VolumesAttached and
// never asks the controller plugin. A driver's listing of published
// nodes is no proof either way (the spec lets it name nodes a volume is
// not published to, and without LIST_VOLUMES_PUBLISHED_NODES the CO
// "MUST not interpret" it). A publish context gone stale (the volume was
// unpublished meanwhile) is the node plugin's to refuse.
type Devices struct{}

// Source implements agent.Devices. It holds nothing.
func (Devices) Source(_ context.Context, _ cloud.VolumeID, device string) (string, func(), error) {
	if _, err := cloudcsi.PublishContext(device); err != nil {
		return "", nop, err
	}
	return device, nop, nil
}

func nop() {}
