package csitest

import (
	"maps"
	"slices"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// supports fails (INVALID_ARGUMENT) if capability c's access mode is one
// of Config.Unsupported, or its access type is one the driver refuses
// (Config.BlockOnly, Config.MountOnly).
func (d *Driver) supports(c *spec.VolumeCapability) error {
	if m := modeOf(c); slices.Contains(d.cfg.Unsupported, m) {
		return status.Errorf(codes.InvalidArgument, "access mode %s is not supported", m)
	}
	switch {
	case d.cfg.BlockOnly && c.GetMount() != nil:
		return status.Error(codes.InvalidArgument, "access type mount is not supported: raw block volumes only")
	case d.cfg.MountOnly && c.GetBlock() != nil:
		return status.Error(codes.InvalidArgument, "access type block is not supported: mounted volumes only")
	}
	return nil
}

// checkSecrets fails (INVALID_ARGUMENT) unless secrets hold every one of
// Config.RequireSecrets with its value. It names the first key missing or
// wrong, never a value.
func (d *Driver) checkSecrets(secrets map[string]string) error {
	for _, k := range sortedKeys(d.cfg.RequireSecrets) {
		if got, ok := secrets[k]; !ok || got != d.cfg.RequireSecrets[k] {
			return status.Errorf(codes.InvalidArgument, "secret %q missing or wrong", k)
		}
	}
	return nil
}

// checkVolumeContext fails (INVALID_ARGUMENT) if the driver requires a
// volume's volume_context back (Config.RequireVolumeContext) and vc is
// not exactly v's.
func (d *Driver) checkVolumeContext(v *volume, vc map[string]string) error {
	if d.cfg.RequireVolumeContext && !maps.Equal(v.context, vc) {
		return status.Errorf(codes.InvalidArgument, "volume_context of volume %s missing or wrong: got %v, want %v", v.id, vc, v.context)
	}
	return nil
}
