package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud"
)

// LoopCloud is what LoopDevices asks of the loop cloud (a *loop.Cloud in
// the same process): which instance backs the node, what the cloud
// records attached to it, and where a volume's image is.
type LoopCloud interface {
	InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool)
	InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error)
	ImagePath(vol cloud.VolumeID) (string, error)
}

// LoopDevices resolves device paths on a node backed by the loop cloud:
// the device of an attached volume is a loop device bound to the volume's
// image file. A device path outlives its binding (a released device is
// bound to the next image that needs one), so before it is handed to the
// mounter two things are checked, and anything else is an error wrapping
// cloud.ErrNotFound (the agent backs off, and mounts nothing):
//   - the cloud records vol attached to this node's instance at exactly
//     that device;
//   - the path is a block device (not a symlink) that the kernel says is
//     bound to the volume's image (/sys/dev/block/MAJ:MIN/loop/backing_file,
//     found from the device's own number, equals the cloud's ImagePath):
//     a stale path never mounts another volume's disk.
//
// And the image must be bound to no other loop device: its disk carries
// ext4, which one machine at a time may mount, and on this host a second
// device of the same image is another machine's view of the same disk (a
// multi-node volume's other attachment, or a device the cloud released
// while still mounted, as after a forced detach: the kernel keeps it
// bound until it is unmounted). Such a device fails with ErrImageShared
// until the other one is gone. Read-only devices are the exception: any
// number of machines may mount one ext4 read-only, so a device the
// kernel has read-only (every device of a ReadOnlyMany disk) may share
// its image with other read-only ones, never with a read-write one.
type LoopDevices struct {
	Cloud LoopCloud
	Node  cloud.NodeName
}

// Source implements Devices: it returns device itself, checked, and held
// open from before the kernel is asked what it is bound to until release.
// A device released while someone holds it open stays bound to its image
// until the last close (the kernel defers the release), so between the
// check and the mount it cannot be released and bound to another
// volume's image, as when an operator detaches the volume right then and
// the next attachment takes the device: the mount then shows the volume
// it was checked for, or nothing. Once mounted, the mount holds it in
// turn. Its errors do not repeat the device and the volume (the agent
// names them).
func (d LoopDevices) Source(ctx context.Context, vol cloud.VolumeID, device string) (string, func(), error) {
	inst, ok := d.Cloud.InstanceOf(d.Node)
	if !ok {
		return "", noRelease, fmt.Errorf("node %s has no instance: %w", d.Node, cloud.ErrNotFound)
	}
	got, err := d.Cloud.InstanceVolumes(ctx, []cloud.InstanceID{inst})
	if err != nil {
		return "", noRelease, fmt.Errorf("node %s: reading what its instance %s has attached: %w", d.Node, inst, err)
	}
	if at, ok := got[inst][vol]; !ok || at != device {
		return "", noRelease, fmt.Errorf("not attached to node %s's instance %s there (the cloud records %q): %w", d.Node, inst, at, cloud.ErrNotFound)
	}
	image, err := d.Cloud.ImagePath(vol)
	if err != nil {
		return "", noRelease, err
	}
	if !filepath.IsAbs(device) || filepath.Clean(device) != device {
		return "", noRelease, fmt.Errorf("not a clean absolute path: %w", cloud.ErrNotFound)
	}
	held, err := holdLoop(device)
	if err != nil {
		return "", noRelease, fmt.Errorf("on node %s: %w", d.Node, err)
	}
	release := func() { held.f.Close() }
	if err := d.check(image, held); err != nil {
		release()
		return "", noRelease, err
	}
	return device, release, nil
}

// check checks the held device: bound to image, and image bound to no
// other device it may not share it with.
func (d LoopDevices) check(image string, held heldLoop) error {
	if held.backing != image {
		return fmt.Errorf("bound to %s on node %s, not to the volume's image %s: %w", held.backing, d.Node, image, cloud.ErrNotFound)
	}
	readOnly, err := loopReadOnly(held.num)
	if err != nil {
		return fmt.Errorf("on node %s: %w", d.Node, err)
	}
	others, err := otherLoops(image, held.num)
	if err != nil {
		return fmt.Errorf("on node %s: listing loop devices: %w", d.Node, err)
	}
	if shared := sharing(readOnly, others); len(shared) > 0 {
		how := "bound to"
		if readOnly {
			how = "bound read-write to"
		}
		return fmt.Errorf("on node %s: the volume's image %s is %s %v too: %w", d.Node, image, how, shared, ErrImageShared)
	}
	return nil
}

// heldLoop is a loop device held open (holdLoop), with what the kernel
// showed it bound to once it was: its backing file and its number
// ("MAJ:MIN").
type heldLoop struct {
	f            *os.File
	backing, num string
}

// boundLoop is a loop device bound to an image, as the kernel shows it.
type boundLoop struct {
	dev      string
	readOnly bool
}

// sharing returns the devices of others that a device of the same image
// cannot share it with: all of them, unless it and they are read-only.
func sharing(readOnly bool, others []boundLoop) []string {
	var out []string
	for _, o := range others {
		if !readOnly || !o.readOnly {
			out = append(out, o.dev)
		}
	}
	return out
}

// ErrImageShared: a loop device's image is bound to another loop device
// too, one of them read-write (LoopDevices). Nothing is mounted; it
// clears when the other device is released.
var ErrImageShared = errors.New("node: the volume's image is bound to another loop device too: ext4 is mounted by one machine at a time, unless every device of it is read-only")
