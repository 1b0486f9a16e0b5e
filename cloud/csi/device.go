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

// Capability is the volume capability tether asks for a volume of mode:
// mount access with file system fsType (DefaultFsType if empty);
// SINGLE_NODE_WRITER for cloud.Exclusive, MULTI_NODE_MULTI_WRITER for
// cloud.MultiNode. The controller (ControllerPublishVolume) and the node
// (NodeStageVolume, NodePublishVolume) must ask for the same one.
func Capability(mode cloud.AccessMode, fsType string) *spec.VolumeCapability {
	if fsType == "" {
		fsType = DefaultFsType
	}
	m := spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	if mode == cloud.MultiNode {
		m = spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return &spec.VolumeCapability{
		AccessType: &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &spec.VolumeCapability_AccessMode{Mode: m},
	}
}
