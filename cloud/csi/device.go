package csi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
)

// DevicePrefix starts every device path this package returns.
const DevicePrefix = "csi:"

// DefaultFsType is the file system of the mount access type when none is
// configured.
const DefaultFsType = "ext4"

// DevicePath is the device path Attach returns for a ControllerPublishVolume
// answer with publish context pc: DevicePrefix then the unpadded URL-safe
// base64 of pc as JSON (keys sorted, so the same context always gives the
// same path, and a repeated attach the same device). tether carries one
// string from the controller to the node agent; the node plugin needs the
// whole context (NodeStageVolume and NodePublishVolume take it), of which
// a device path is at most one driver-chosen key, so the string carries it
// all. An empty context gives a non-empty path too: "" means "unknown"
// to tether.
func DevicePath(pc map[string]string) string {
	if pc == nil {
		pc = map[string]string{}
	}
	b, err := json.Marshal(pc)
	if err != nil {
		panic("csi: marshalling a map of strings: " + err.Error()) // cannot happen
	}
	return DevicePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// PublishContext decodes a device path made by DevicePath.
func PublishContext(device string) (map[string]string, error) {
	enc, ok := strings.CutPrefix(device, DevicePrefix)
	if !ok {
		return nil, fmt.Errorf("csi: device path %q does not start with %q: not attached by a CSI driver: %w", device, DevicePrefix, cloud.ErrTerminal)
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("csi: device path %q: %v: %w", device, err, cloud.ErrTerminal)
	}
	var pc map[string]string
	if err := json.Unmarshal(b, &pc); err != nil {
		return nil, fmt.Errorf("csi: device path %q: %v: %w", device, err, cloud.ErrTerminal)
	}
	if pc == nil {
		pc = map[string]string{}
	}
	return pc, nil
}

// Access is how tether uses a volume, which decides the capability it
// asks of the driver: the volume's access mode and whether it is
// ReadOnlyMany (tether's store.VolumeSpec Mode and ReadOnly). ReadOnly
// means something only with cloud.MultiNode, as in tether's store.
type Access struct {
	Mode     cloud.AccessMode
	ReadOnly bool
}

// ReadOnlyMany reports whether a is ReadOnlyMany: cloud.MultiNode and
// read-only. Such a volume is published read-only everywhere.
func (a Access) ReadOnlyMany() bool { return a.Mode == cloud.MultiNode && a.ReadOnly }

// AccessMode is a's CSI access mode: SINGLE_NODE_WRITER for
// cloud.Exclusive (ReadWriteOnce), MULTI_NODE_READER_ONLY for
// ReadOnlyMany, MULTI_NODE_MULTI_WRITER for ReadWriteMany.
func (a Access) AccessMode() spec.VolumeCapability_AccessMode_Mode {
	switch {
	case a.ReadOnlyMany():
		return spec.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case a.Mode == cloud.MultiNode:
		return spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
}

// String is a's CSI access mode ("MULTI_NODE_READER_ONLY").
func (a Access) String() string { return a.AccessMode().String() }

// Capability is the volume capability tether asks for a volume used as a:
// mount access with file system fsType (DefaultFsType if empty), and a's
// access mode (Access.AccessMode). The controller
// (ValidateVolumeCapabilities, ControllerPublishVolume) and the node
// (NodeStageVolume, NodePublishVolume) must ask for the same one.
func Capability(a Access, fsType string) *spec.VolumeCapability {
	if fsType == "" {
		fsType = DefaultFsType
	}
	return &spec.VolumeCapability{
		AccessType: &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &spec.VolumeCapability_AccessMode{Mode: a.AccessMode()},
	}
}
