package csitest

import (
	"fmt"
	"slices"

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
	return s
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
	return slices.Clone(d.calls)
}

// Count counts the logged calls of method about vol ("": any volume).
func (d *Driver) Count(method, vol string) int {
	n := 0
	for _, c := range d.Calls() {
		if c.Method == method && (vol == "" || c.Volume == vol) {
			n++
		}
	}
	return n
}

// Unpublish unpublishes vol from node directly, with no checks (someone
// else's detach). It reports false if vol is unknown.
func (d *Driver) Unpublish(vol, node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[vol]
	if v == nil {
		return false
	}
	delete(v.published, node)
	return true
}

// Describe is the driver's state in one line per volume (for failure
// messages).
func (d *Driver) Describe() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := ""
	for _, id := range sortedKeys(boolSet(d.vols)) {
		v := d.vols[id]
		s += fmt.Sprintf("%s: published to %v", id, d.publishedTo(id))
		for n, paths := range v.staged {
			s += fmt.Sprintf(", staged on %s at %v", n, sortedKeys(paths))
		}
		for n, paths := range v.targets {
			s += fmt.Sprintf(", published on %s at %v", n, sortedKeys(paths))
		}
		s += "\n"
	}
	if s == "" {
		return "no volumes\n"
	}
	return s
}

func boolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
