package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud/files/names"
)

// CheckVolumeDriver checks the fields a volume hands its storage driver
// (store.VolumeSpec.HasDriverFields) on their own: a Block volume has no
// file system, so no fsType or mountOptions; the others follow
// cloud/files/names' rules, and secretRef is a valid name (it becomes a file
// name under the data directory: nothing that could leave it passes).
// The error wraps ErrInvalid and names the volume and the document's
// field.
func CheckVolumeDriver(v store.VolumeSpec) error {
	bad := func(field string, err error) error {
		return fmt.Errorf("%w: volume %q: %s: %w", ErrInvalid, v.ID, field, err)
	}
	if v.Block && (v.FsType != "" || len(v.MountOptions) > 0) {
		return bad("fsType, mountOptions", fmt.Errorf("a volumeMode Block volume is a raw device, with no file system to type or mount"))
	}
	if v.FsType != "" {
		if err := names.ValidFsType(v.FsType); err != nil {
			return bad("fsType", err)
		}
	}
	if err := names.ValidMountOptions(v.MountOptions); err != nil {
		return bad("mountOptions", err)
	}
	if err := names.ValidVolumeAttributes(v.VolumeAttributes); err != nil {
		return bad("csi.volumeAttributes", err)
	}
	if v.SecretRef != "" {
		if err := names.ValidName(names.KindSecret, v.SecretRef); err != nil {
			return bad("csi.secretRef", err)
		}
	}
	return nil
}

// checkDriverKept refuses to change an existing volume's driver fields:
// like its access mode they are fixed when the volume is created (its
// volume_context is what its driver returned then, its file system was
// made with that type, and what is mounted was mounted with those
// options and secrets). A secret's content changes in its file, under
// the same secretRef.
func checkDriverKept(old, v store.VolumeSpec) error {
	if store.SameDriverFields(old, v) {
		return nil
	}
	return fmt.Errorf("%w: volume %q: %s cannot change: volumeMode, fsType, mountOptions and csi are fixed when the volume is created, like its access mode "+
		"(to change them, delete volume/%s, after the workloads that use it, and apply it again once its disk is detached)",
		ErrInvalid, v.ID, strings.Join(changedDriverFields(old, v), ", "), v.ID)
}

// changedDriverFields names the document fields that differ.
func changedDriverFields(a, b store.VolumeSpec) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"volumeMode", a.Block == b.Block},
		{"fsType", a.FsType == b.FsType},
		{"mountOptions", slices.Equal(a.MountOptions, b.MountOptions)},
		{"csi.volumeAttributes", maps.Equal(a.VolumeAttributes, b.VolumeAttributes)},
		{"csi.secretRef", a.SecretRef == b.SecretRef},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}
