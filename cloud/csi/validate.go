package csi

import (
	"context"
	"fmt"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
)

// Validate asks the driver whether vol exists and can be used with the
// capability of a (ValidateVolumeCapabilities, which every controller
// plugin serves: MULTI_NODE_READER_ONLY for a ReadOnlyMany volume, access
// type Block for a raw block one), with a's volume_context and secrets: nil
// if it confirms; cloud.ErrNotFound if it has no such
// volume; cloud.ErrTerminal, with the driver's message, if it does not
// confirm the capability. tether does not provision CSI volumes: a
// volume is the driver's, and this is how tether checks one before it
// takes it on. It changes nothing.
func (p *Provider) Validate(ctx context.Context, vol cloud.VolumeID, a Access) error {
	op := fmt.Sprintf("ValidateVolumeCapabilities %s (%s)", vol, a)
	req := &spec.ValidateVolumeCapabilitiesRequest{VolumeId: string(vol),
		VolumeCapabilities: []*spec.VolumeCapability{Capability(a, p.cfg.fsType)}, VolumeContext: a.VolumeContext, Secrets: a.Secrets}
	r, err := call(ctx, op, false, func(c context.Context) (*spec.ValidateVolumeCapabilitiesResponse, error) {
		return p.ctl.ValidateVolumeCapabilities(c, req)
	})
	if err != nil {
		return err
	}
	if r.GetConfirmed() == nil {
		msg := r.GetMessage()
		if msg == "" {
			msg = "no reason given"
		}
		return fmt.Errorf("csi: %s: driver %q does not confirm the capability: %s: %w", op, p.plugin.Name, msg, cloud.ErrTerminal)
	}
	return nil
}
