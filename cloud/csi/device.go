package csi

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
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

// PublishContext decodes a device path made by DevicePath or
// DevicePathFor.
func PublishContext(device string) (map[string]string, error) {
	if strings.HasPrefix(device, CarryingPrefix) {
		c, err := decodeCarried(device)
		return c.PublishContext, err
	}
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
// ReadOnlyMany (tether's store.VolumeSpec Mode and ReadOnly), raw block
// or mounted and how, and what every call about it carries besides.
// ReadOnly means something only with cloud.MultiNode, as in tether's
// store. Its String and GoString leave the secrets out.
type Access struct {
	Mode     cloud.AccessMode
	ReadOnly bool
	// Block asks for access type Block (a raw device, staged in a
	// directory and published as a device file); else Mount, with
	// FsType ("": the configured one, else DefaultFsType) and MountFlags.
	Block      bool
	FsType     string
	MountFlags []string
	// VolumeContext is the volume's volume_context (what CreateVolume
	// returned), sent with ControllerPublishVolume,
	// ValidateVolumeCapabilities, NodeStageVolume and NodePublishVolume.
	VolumeContext map[string]string
	// SecretRef names the secrets (the volume's csi.secretRef): a device
	// path carries it to the node agent (DevicePathFor), which reads the
	// secrets from its own data directory.
	SecretRef string
	// Secrets are sent with every call that takes them (the same four,
	// and ControllerUnpublishVolume), read by the wiring when it is asked
	// for the Access, never kept.
	Secrets Secrets
}

// Secrets are the secrets of a CSI request. They print as how many there
// are, never as what they are (fmt's %v, %+v, %#v, %s).
type Secrets map[string]string

// String says how many secrets s holds, not what they are.
func (s Secrets) String() string { return fmt.Sprintf("[%d secrets]", len(s)) }

// GoString is String: %#v shows no secret either.
func (s Secrets) GoString() string { return s.String() }

// GoString describes a without its secrets.
func (a Access) GoString() string {
	return fmt.Sprintf("csi.Access{Mode:%v, ReadOnly:%v, Block:%v, FsType:%q, MountFlags:%q, VolumeContext:%q, Secrets:%v}",
		a.Mode, a.ReadOnly, a.Block, a.FsType, a.MountFlags, a.VolumeContext, a.Secrets)
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

// String is a's CSI access mode ("MULTI_NODE_READER_ONLY"), with
// ", block" for a raw block volume.
func (a Access) String() string {
	if a.Block {
		return a.AccessMode().String() + ", block"
	}
	return a.AccessMode().String()
}

// Capability is the volume capability tether asks for a volume used as a:
// access type Block for a raw block volume, else Mount with a's file
// system (else fsType, else DefaultFsType) and mount flags; and a's
// access mode (Access.AccessMode). The controller
// (ValidateVolumeCapabilities, ControllerPublishVolume) and the node
// (NodeStageVolume, NodePublishVolume) must ask for the same one.
func Capability(a Access, fsType string) *spec.VolumeCapability {
	c := &spec.VolumeCapability{AccessMode: &spec.VolumeCapability_AccessMode{Mode: a.AccessMode()}}
	if a.Block {
		c.AccessType = &spec.VolumeCapability_Block{Block: &spec.VolumeCapability_BlockVolume{}}
		return c
	}
	c.AccessType = &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{
		FsType: cmp.Or(a.FsType, fsType, DefaultFsType), MountFlags: slices.Clone(a.MountFlags)}}
	return c
}
