package csitest

import (
	"maps"
	"slices"
	"strings"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
)

// Call is one call about a volume that the driver received, as it came
// (whatever the driver answered): the ground truth of what a CO asked.
type Call struct {
	Method string // "ControllerPublishVolume"
	Volume string
	// Node is the request's node ID (controller calls) or the serving
	// node's (node calls).
	Node string
	// Path is the staging path (NodeStageVolume, NodeUnstageVolume) or
	// the target path (NodePublishVolume, NodeUnpublishVolume).
	Path string
	// Mode is the access mode of the request's volume capability (the
	// first one of ValidateVolumeCapabilities'), UNKNOWN if it has none.
	Mode spec.VolumeCapability_AccessMode_Mode
	// ReadOnly is the request's readonly (ControllerPublishVolume,
	// NodePublishVolume).
	ReadOnly bool
	// Block: that capability's access type is Block. FsType and
	// MountFlags are its Mount access type's.
	Block      bool
	FsType     string
	MountFlags []string
	// VolumeContext is the request's volume_context
	// (ValidateVolumeCapabilities, ControllerPublishVolume,
	// NodeStageVolume, NodePublishVolume).
	VolumeContext map[string]string
	// SecretKeys are the keys of the request's secrets, sorted; their
	// values are never kept.
	SecretKeys []string
	// Staging is NodePublishVolume's staging_target_path.
	Staging string
}

func (c Call) String() string {
	s := c.Method + " " + c.Volume
	if c.Node != "" {
		s += " node " + c.Node
	}
	if c.Path != "" {
		s += " at " + c.Path
	}
	if c.Mode != spec.VolumeCapability_AccessMode_UNKNOWN {
		s += " " + c.Mode.String()
	}
	if c.ReadOnly {
		s += " readonly"
	}
	if c.Block {
		s += " block"
	}
	if c.FsType != "" {
		s += " fs " + c.FsType
	}
	if len(c.MountFlags) > 0 {
		s += " flags " + strings.Join(c.MountFlags, ",")
	}
	if c.Staging != "" {
		s += " staged at " + c.Staging
	}
	return s
}

// capability is c with what it records of capability vc: access mode,
// access type, file system and mount flags.
func (c Call) capability(vc *spec.VolumeCapability) Call {
	c.Mode = modeOf(vc)
	c.Block = vc.GetBlock() != nil
	c.FsType = vc.GetMount().GetFsType()
	c.MountFlags = slices.Clone(vc.GetMount().GetMountFlags())
	return c
}

// sent is c with what it records of a request's volume_context and
// secrets (their keys only).
func (c Call) sent(volumeContext, secrets map[string]string) Call {
	c.VolumeContext = maps.Clone(volumeContext)
	c.SecretKeys = sortedKeys(secrets)
	return c
}

// record logs a call; handlers call it first, before Before.
func (d *Driver) record(c Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, c)
}

// modeOf is the access mode of capability c, UNKNOWN if there is none.
func modeOf(c *spec.VolumeCapability) spec.VolumeCapability_AccessMode_Mode {
	return c.GetAccessMode().GetMode()
}

// Calls lists the calls about volumes received so far, in order:
// CreateVolume (with its name as Volume), DeleteVolume,
// ValidateVolumeCapabilities, ControllerPublishVolume,
// ControllerUnpublishVolume, ControllerGetVolume and the node's stage,
// unstage, publish and unpublish. Listings and identity calls are not
// logged.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.calls)
	for i, c := range out { // the caller's to change
		out[i].MountFlags, out[i].VolumeContext, out[i].SecretKeys = slices.Clone(c.MountFlags), maps.Clone(c.VolumeContext), slices.Clone(c.SecretKeys)
	}
	return out
}

// Count counts the logged calls of method about vol ("": any volume).
func (d *Driver) Count(method, vol string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		if c.Method == method && (vol == "" || c.Volume == vol) {
			n++
		}
	}
	return n
}
