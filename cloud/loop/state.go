package loop

// The cloud's world as data: instances, volumes and attachments. Pure: no
// files, no devices, no clock. A published world is never modified; a
// change clones it (clone), changes the clone and publishes it once it is
// durable.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
)

// kindInstance names instance IDs in name errors (names has no kind for
// them: they never become paths there either).
const kindInstance = "instance ID"

// world is the durable state of a Cloud, as state.json holds it.
type world struct {
	Version   int                                 `json:"version"`
	Seq       int                                 `json:"seq"` // last instance ID counter used
	Instances map[cloud.InstanceID]instance       `json:"instances"`
	Volumes   map[cloud.VolumeID]volume           `json:"volumes"`
	nodes     map[cloud.NodeName]cloud.InstanceID // derived from Instances (index)
}

// instance is a machine that volumes attach to. There is no machine: a
// node of tether that runs on this host plays it.
type instance struct {
	Node    cloud.NodeName `json:"node"`
	Running bool           `json:"running"`
	Limit   int            `json:"attach_limit"`
}

// volume is a disk: the image file images/<id>.img of Size bytes.
type volume struct {
	Mode     accessMode `json:"mode"`
	Size     int64      `json:"size"`
	ReadOnly bool       `json:"read_only,omitempty"` // every device of it is read-only
	// Attached maps each instance the volume is attached to to its device.
	Attached map[cloud.InstanceID]attachment `json:"attached,omitempty"`
}

// attachment is one loop device bound to a volume's image for one
// instance.
type attachment struct {
	Device string `json:"device"` // "/dev/loopN"
	Image  string `json:"image"`  // the image it was bound to, for readers of the file
}

const worldVersion = 1

func newWorld() *world {
	return &world{
		Version:   worldVersion,
		Instances: make(map[cloud.InstanceID]instance),
		Volumes:   make(map[cloud.VolumeID]volume),
		nodes:     make(map[cloud.NodeName]cloud.InstanceID),
	}
}

// clone returns a deep copy of w.
func (w *world) clone() *world {
	out := &world{
		Version:   w.Version,
		Seq:       w.Seq,
		Instances: maps.Clone(w.Instances),
		Volumes:   make(map[cloud.VolumeID]volume, len(w.Volumes)),
		nodes:     maps.Clone(w.nodes),
	}
	for id, v := range w.Volumes {
		v.Attached = maps.Clone(v.Attached)
		out.Volumes[id] = v
	}
	return out
}

// attachmentRef names one attachment.
type attachmentRef struct {
	Vol  cloud.VolumeID
	Inst cloud.InstanceID
}

// attachments returns every attachment, sorted by volume, then instance.
func (w *world) attachments() []attachmentRef {
	var out []attachmentRef
	for _, vol := range slices.Sorted(maps.Keys(w.Volumes)) {
		for _, inst := range slices.Sorted(maps.Keys(w.Volumes[vol].Attached)) {
			out = append(out, attachmentRef{vol, inst})
		}
	}
	return out
}

// attachedTo returns what inst has attached: volume -> attachment.
func (w *world) attachedTo(inst cloud.InstanceID) map[cloud.VolumeID]attachment {
	out := make(map[cloud.VolumeID]attachment)
	for id, v := range w.Volumes {
		if a, ok := v.Attached[inst]; ok {
			out[id] = a
		}
	}
	return out
}

// checkAttach decides an attach of vol to inst. In order: unknown volume
// or instance (cloud.ErrNotFound); stopped instance (cloud.ErrRetryable);
// already attached to inst (ok, with the attachment: idempotent); an
// exclusive volume attached elsewhere (cloud.ErrAttachedElsewhere); the
// instance at its limit (cloud.ErrLimitReached). Otherwise a new device is
// wanted: ok is false and err nil.
func (w *world) checkAttach(vol cloud.VolumeID, inst cloud.InstanceID) (a attachment, ok bool, err error) {
	v, in, err := w.lookup("attach", vol, inst)
	if err != nil {
		return attachment{}, false, err
	}
	if !in.Running {
		return attachment{}, false, fmt.Errorf("loop: attach %s to %s: instance not running: %w", vol, inst, cloud.ErrRetryable)
	}
	if a, ok := v.Attached[inst]; ok {
		return a, true, nil
	}
	if v.Mode.mode() == cloud.Exclusive && len(v.Attached) > 0 {
		other := slices.Sorted(maps.Keys(v.Attached))[0]
		return attachment{}, false, fmt.Errorf("loop: attach %s to %s: exclusive volume attached to %s: %w", vol, inst, other, cloud.ErrAttachedElsewhere)
	}
	if n := len(w.attachedTo(inst)); n >= in.Limit {
		return attachment{}, false, fmt.Errorf("loop: attach %s to %s: instance has %d of %d volumes: %w", vol, inst, n, in.Limit, cloud.ErrLimitReached)
	}
	return attachment{}, false, nil
}

// checkDetach decides a detach of vol from inst: unknown volume or
// instance fail with cloud.ErrNotFound; ok is false when vol is not
// attached to inst (nothing to do).
func (w *world) checkDetach(vol cloud.VolumeID, inst cloud.InstanceID) (a attachment, ok bool, err error) {
	v, _, err := w.lookup("detach", vol, inst)
	if err != nil {
		return attachment{}, false, err
	}
	a, ok = v.Attached[inst]
	return a, ok, nil
}

func (w *world) lookup(op string, vol cloud.VolumeID, inst cloud.InstanceID) (volume, instance, error) {
	v, ok := w.Volumes[vol]
	if !ok {
		return volume{}, instance{}, fmt.Errorf("loop: %s %s/%s: volume %s not found: %w", op, vol, inst, vol, cloud.ErrNotFound)
	}
	in, ok := w.Instances[inst]
	if !ok {
		return volume{}, instance{}, fmt.Errorf("loop: %s %s/%s: instance %s not found: %w", op, vol, inst, inst, cloud.ErrNotFound)
	}
	return v, in, nil
}

// setAttachment records a (or replaces the record of) vol attached to
// inst. The volume must exist.
func (w *world) setAttachment(vol cloud.VolumeID, inst cloud.InstanceID, a attachment) {
	v := w.Volumes[vol]
	if v.Attached == nil {
		v.Attached = make(map[cloud.InstanceID]attachment)
	}
	v.Attached[inst] = a
	w.Volumes[vol] = v
}

// removeAttachment forgets vol attached to inst, if it was.
func (w *world) removeAttachment(vol cloud.VolumeID, inst cloud.InstanceID) {
	v, ok := w.Volumes[vol]
	if !ok {
		return
	}
	delete(v.Attached, inst)
	if len(v.Attached) == 0 {
		v.Attached = nil
	}
	w.Volumes[vol] = v
}

// detachInstance forgets every attachment of inst and returns them.
func (w *world) detachInstance(inst cloud.InstanceID) map[cloud.VolumeID]attachment {
	gone := w.attachedTo(inst)
	for vol := range gone {
		w.removeAttachment(vol, inst)
	}
	return gone
}

// addInstance creates a running instance backing node with the attach
// limit limit and returns its ID: "i-<node>-<counter>", the node's name
// shortened if needed so that the ID is itself a valid name.
func (w *world) addInstance(node cloud.NodeName, limit int) cloud.InstanceID {
	w.Seq++
	suffix := fmt.Sprintf("-%d", w.Seq)
	n := string(node)
	if keep := names.MaxNameLen - len("i-") - len(suffix); len(n) > keep {
		n = n[:keep]
	}
	id := cloud.InstanceID("i-" + n + suffix)
	w.Instances[id] = instance{Node: node, Running: true, Limit: limit}
	w.nodes[node] = id
	return id
}

// deleteInstance forgets inst and its attachments (returned); its node has
// no instance any more.
func (w *world) deleteInstance(inst cloud.InstanceID) map[cloud.VolumeID]attachment {
	gone := w.detachInstance(inst)
	in := w.Instances[inst]
	delete(w.Instances, inst)
	if w.nodes[in.Node] == inst {
		delete(w.nodes, in.Node)
	}
	return gone
}

// accessMode is a cloud.AccessMode written by its name ("exclusive",
// "multi-node").
type accessMode cloud.AccessMode

func (m accessMode) mode() cloud.AccessMode { return cloud.AccessMode(m) }

func (m accessMode) MarshalText() ([]byte, error) {
	switch m.mode() {
	case cloud.Exclusive, cloud.MultiNode:
		return []byte(m.mode().String()), nil
	}
	return nil, fmt.Errorf("unknown access mode %d", int(m))
}

func (m *accessMode) UnmarshalText(b []byte) error {
	for _, known := range []cloud.AccessMode{cloud.Exclusive, cloud.MultiNode} {
		if string(b) == known.String() {
			*m = accessMode(known)
			return nil
		}
	}
	return fmt.Errorf("unknown access mode %q", b)
}
