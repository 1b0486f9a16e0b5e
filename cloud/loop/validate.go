package loop

// Checks of names and of a loaded world. Pure.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
)

// devicePrefix is the prefix of every device path the cloud hands out.
const devicePrefix = "/dev/loop"

// sectorSize divides every volume's size: a loop device is made of
// 512-byte sectors, and an image of another size would lose its tail.
const sectorSize = 512

func validVolume(id cloud.VolumeID) error {
	return names.ValidName(names.KindVolume, string(id))
}

func validNode(node cloud.NodeName) error {
	return names.ValidName(names.KindNode, string(node))
}

func validInstance(id cloud.InstanceID) error {
	return names.ValidName(kindInstance, string(id))
}

// badName is the error of a call naming something with an invalid name:
// it wraps the *names.NameError (names.ErrInvalidName) and
// cloud.ErrTerminal, since no retry can make it valid.
func badName(op string, err error) error {
	return fmt.Errorf("loop: %s: %w: %w", op, err, cloud.ErrTerminal)
}

// validCall checks the names of a provider call on vol and inst.
func validCall(op string, vol cloud.VolumeID, inst cloud.InstanceID) error {
	if err := validVolume(vol); err != nil {
		return badName(op, err)
	}
	if err := validInstance(inst); err != nil {
		return badName(op, err)
	}
	return nil
}

// loopIndex returns N of a device path "/dev/loopN", or ok=false if dev
// is not such a path (so that no other path is ever built from it).
func loopIndex(dev string) (n int, ok bool) {
	digits, found := strings.CutPrefix(dev, devicePrefix)
	if !found || digits == "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// validSize checks the size of a new volume.
func validSize(size int64) error {
	if size <= 0 || size%sectorSize != 0 {
		return fmt.Errorf("loop: volume size %d: must be a positive multiple of %d bytes", size, sectorSize)
	}
	return nil
}

// validate checks a world read from disk, and builds its node index: every
// name valid, one instance per node, known references, no attachment on a
// stopped instance, at most one attachment of an exclusive volume, device
// paths of the form /dev/loopN.
func (w *world) validate() error {
	if w.Version != worldVersion {
		return fmt.Errorf("version %d, want %d", w.Version, worldVersion)
	}
	if w.Instances == nil {
		w.Instances = make(map[cloud.InstanceID]instance)
	}
	if w.Volumes == nil {
		w.Volumes = make(map[cloud.VolumeID]volume)
	}
	w.nodes = make(map[cloud.NodeName]cloud.InstanceID, len(w.Instances))
	for id, in := range w.Instances {
		if err := validInstance(id); err != nil {
			return err
		}
		if err := validNode(in.Node); err != nil {
			return fmt.Errorf("instance %s: %w", id, err)
		}
		if other, dup := w.nodes[in.Node]; dup {
			return fmt.Errorf("instances %s and %s both back node %s", other, id, in.Node)
		}
		if in.Limit < 0 {
			return fmt.Errorf("instance %s: negative attach limit %d", id, in.Limit)
		}
		w.nodes[in.Node] = id
	}
	for id, v := range w.Volumes {
		if err := w.validateVolume(id, v); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) validateVolume(id cloud.VolumeID, v volume) error {
	if err := validVolume(id); err != nil {
		return err
	}
	if err := validSize(v.Size); err != nil {
		return fmt.Errorf("volume %s: %w", id, err)
	}
	if v.Mode.mode() == cloud.Exclusive && len(v.Attached) > 1 {
		return fmt.Errorf("exclusive volume %s is attached to %d instances", id, len(v.Attached))
	}
	for inst, a := range v.Attached {
		in, ok := w.Instances[inst]
		switch {
		case !ok:
			return fmt.Errorf("volume %s is attached to unknown instance %s", id, inst)
		case !in.Running:
			return fmt.Errorf("volume %s is attached to stopped instance %s", id, inst)
		}
		if _, ok := loopIndex(a.Device); !ok {
			return fmt.Errorf("volume %s on %s: device %q is not a loop device path", id, inst, a.Device)
		}
	}
	return nil
}
