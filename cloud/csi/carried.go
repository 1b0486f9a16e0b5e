package csi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tether/tether/cloud"
)

// CarryingPrefix starts the device paths of DevicePathFor.
const CarryingPrefix = "csi+"

// carried is what a DevicePathFor device path holds: the publish context
// and how the volume is used, its secrets by name only.
type carried struct {
	PublishContext map[string]string `json:"pc"`
	Mode           cloud.AccessMode  `json:"mode,omitempty"`
	ReadOnly       bool              `json:"ro,omitempty"`
	Block          bool              `json:"block,omitempty"`
	FsType         string            `json:"fs,omitempty"`
	MountFlags     []string          `json:"flags,omitempty"`
	VolumeContext  map[string]string `json:"ctx,omitempty"`
	SecretRef      string            `json:"secretRef,omitempty"`
}

// DevicePathFor is the device path Attach returns for a publication with
// publish context pc of a volume used as a: CarryingPrefix then the
// unpadded URL-safe base64 of the context and a as JSON, without a's
// secrets (only their name, SecretRef). tether carries one string from
// the controller to the node agent (the node status's VolumesAttached),
// and a node agent on another machine has no store to read a volume's
// access from: the node plugin must be asked for the capability the
// controller published with, with the same volume_context, so the path
// carries them. The same pc and a always give the same path.
func DevicePathFor(pc map[string]string, a Access) string {
	if pc == nil {
		pc = map[string]string{}
	}
	c := carried{PublishContext: pc, Mode: a.Mode, ReadOnly: a.ReadOnly, Block: a.Block, FsType: a.FsType,
		MountFlags: a.MountFlags, VolumeContext: a.VolumeContext, SecretRef: a.SecretRef}
	b, err := json.Marshal(c)
	if err != nil {
		panic("csi: marshalling strings: " + err.Error()) // cannot happen
	}
	return CarryingPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// DeviceAccess is how the volume of a DevicePathFor device path is used,
// without secrets (SecretRef names them); ok is false for a path of
// DevicePath, which carries none.
func DeviceAccess(device string) (a Access, ok bool, err error) {
	if !strings.HasPrefix(device, CarryingPrefix) {
		if _, err := PublishContext(device); err != nil {
			return Access{}, false, err
		}
		return Access{}, false, nil
	}
	c, err := decodeCarried(device)
	if err != nil {
		return Access{}, false, err
	}
	return Access{Mode: c.Mode, ReadOnly: c.ReadOnly, Block: c.Block, FsType: c.FsType, MountFlags: c.MountFlags,
		VolumeContext: c.VolumeContext, SecretRef: c.SecretRef}, true, nil
}

func decodeCarried(device string) (carried, error) {
	enc, _ := strings.CutPrefix(device, CarryingPrefix)
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return carried{}, fmt.Errorf("csi: device path %q: %v: %w", device, err, cloud.ErrTerminal)
	}
	var c carried
	if err := json.Unmarshal(b, &c); err != nil {
		return carried{}, fmt.Errorf("csi: device path %q: %v: %w", device, err, cloud.ErrTerminal)
	}
	if c.Mode != cloud.Exclusive && c.Mode != cloud.MultiNode {
		return carried{}, fmt.Errorf("csi: device path %q: access mode %d: %w", device, c.Mode, cloud.ErrTerminal)
	}
	if c.PublishContext == nil {
		c.PublishContext = map[string]string{}
	}
	return c, nil
}
