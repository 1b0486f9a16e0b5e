package api

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Volume modes of a VolumeDoc (volume_mode; "" is Filesystem).
const (
	VolumeModeFilesystem = "Filesystem"
	VolumeModeBlock      = "Block"
)

// DriverVolumes is implemented by a cloud.Provisioner whose volumes are a storage
// driver's (a CSI driver's): their documents may carry what the driver
// needs (store.VolumeSpec.HasDriverFields), and provision hands it the
// new volumes whole, with ProvisionVolumes, instead of
// CreateVolumesUncommitted (a CSI driver checks the capability with the
// volume's attributes and secrets). A Provisioner without it refuses such
// fields: its cloud would ignore them.
type DriverVolumes interface {
	// ProvisionVolumes is CreateVolumesUncommitted with the whole specs.
	ProvisionVolumes(vols []store.VolumeSpec) error
}

// volumeSpecOf converts a volume document: its access mode (ModeOf) and
// its volume mode, names that have no store value otherwise. The error
// wraps controller.ErrInvalid and names the volume and the field. It
// checks nothing else: the controller validates the apply, once (its
// Validate, controller.CheckVolumeDriver included).
func volumeSpecOf(d *messages.VolumeDoc) (store.VolumeSpec, error) {
	mode, readOnly, err := ModeOf(d.GetAccessMode())
	if err != nil {
		return store.VolumeSpec{}, err
	}
	v := store.VolumeSpec{ID: cloud.VolumeID(d.GetName()), Mode: mode, ReadOnly: readOnly, FsType: d.GetFsType(),
		MountOptions: slices.Clone(d.GetMountOptions()), VolumeAttributes: maps.Clone(d.GetCsi().GetVolumeAttributes()),
		SecretRef: d.GetCsi().GetSecretRef()}
	switch d.GetVolumeMode() {
	case "", VolumeModeFilesystem:
	case VolumeModeBlock:
		v.Block = true
	default:
		return store.VolumeSpec{}, fmt.Errorf("%w: volume %q: volumeMode: unknown mode %q (want %s or %s)",
			controller.ErrInvalid, d.GetName(), d.GetVolumeMode(), VolumeModeFilesystem, VolumeModeBlock)
	}
	return v.Clone(), nil
}

// volumeDoc is v as get shows it, its access mode shown as accessMode.
// Of its secrets only the name of their file is shown.
func volumeDoc(v store.VolumeSpec, accessMode string) *messages.VolumeDoc {
	d := &messages.VolumeDoc{Name: string(v.ID), AccessMode: accessMode, VolumeMode: VolumeModeFilesystem,
		FsType: v.FsType, MountOptions: slices.Clone(v.MountOptions)}
	if v.Block {
		d.VolumeMode = VolumeModeBlock
	}
	if len(v.VolumeAttributes) > 0 || v.SecretRef != "" {
		d.Csi = &messages.VolumeCSIDoc{VolumeAttributes: maps.Clone(v.VolumeAttributes), SecretRef: v.SecretRef}
	}
	return d
}

// checkDriverFields refuses a volume that sets driver fields unless the
// cloud takes them (DriverVolumes).
func (s *service) checkDriverFields(v store.VolumeSpec) error {
	if _, ok := s.nodes.(DriverVolumes); ok || !v.HasDriverFields() {
		return nil
	}
	return fmt.Errorf("%w: volume %q: volumeMode Block, fsType, mountOptions and csi are what a CSI driver needs, and this cloud has none to hand them to "+
		"(they would be ignored): drop them, or run tether up with --csi-controller-socket and --csi-node-socket", controller.ErrInvalid, v.ID)
}
