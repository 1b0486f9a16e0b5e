package cloud

import (
	"context"
	"fmt"
)

// NodeName is the cluster's name of a node ("n1"). It is not a hostname and
// not a cloud instance ID; converting one into the other is an explicit call
// (Provider.InstanceID).
type NodeName string

// InstanceID is the cloud's identity of a machine ("i-0abc..."). It changes
// when a node is replaced, while the NodeName may stay.
type InstanceID string

// VolumeID is the cloud's identity of a volume.
type VolumeID string

// AccessMode says how many nodes may have a volume attached at once.
type AccessMode int

const (
	// Exclusive (ReadWriteOnce): at most one instance at a time. A cloud
	// refuses to attach an exclusive volume that is attached elsewhere.
	Exclusive AccessMode = iota
	// MultiNode (ReadWriteMany / ReadOnlyMany): any number of instances.
	MultiNode
)

func (m AccessMode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case MultiNode:
		return "multi-node"
	}
	return fmt.Sprintf("AccessMode(%d)", int(m))
}

// Provider is what the actors call. Every method may block for the length of
// a cloud round trip, so actors call it from a goroutine and send the result
// back to themselves, never from inside Receive. Implementations must be safe
// for concurrent use and return errors classified with the sentinels of this
// package (see Classify).
//
// What callers may rely on, and no more: a call whose ctx is already done
// is not sent at all (so an incarnation that cancels its context before
// its successor reads the intent journal sends nothing after that); a
// call once sent is carried out
// even if its caller stops waiting (cancelling ctx only stops the wait); it
// never takes effect after ctx's deadline (callers bound every mutating
// call with one, and a successor that knows the deadline of an operation
// in flight knows when it can no longer land); a call that fails with the
// context's error may or may not have taken effect (its reply may have been
// lost), any other error means it had no effect. A cloud may accept a
// second attach of an exclusive volume (multi-attach disks): refusing it
// is a second line of defence, never the first.
type Provider interface {
	// InstanceID resolves a node's name to the instance that currently
	// backs it.
	InstanceID(ctx context.Context, node NodeName) (InstanceID, error)

	// Attach attaches vol to inst and returns the device path. Attaching a
	// volume that is already attached to inst succeeds (idempotent).
	// Attaching an exclusive volume attached to another instance fails with
	// ErrAttachedElsewhere; a full instance fails with ErrLimitReached.
	Attach(ctx context.Context, vol VolumeID, inst InstanceID) (devicePath string, err error)

	// Detach detaches vol from inst. Detaching a volume that is not
	// attached to inst succeeds (idempotent).
	Detach(ctx context.Context, vol VolumeID, inst InstanceID) error

	// VolumesAreAttached answers, in ONE call, for every instance of the
	// query, which of the listed volumes are attached to it. At most
	// BatchSize instances per call. An instance that does not exist maps to
	// all false.
	VolumesAreAttached(ctx context.Context, query map[InstanceID][]VolumeID) (map[InstanceID]map[VolumeID]bool, error)

	// InstanceVolumes returns, in ONE call, everything each instance has
	// attached (volume -> device path). At most BatchSize instances per call.
	// An instance that does not exist (deleted, or replaced by another
	// instance of its node) is absent from the result; one that exists but
	// is stopped maps to an empty map.
	InstanceVolumes(ctx context.Context, insts []InstanceID) (map[InstanceID]map[VolumeID]string, error)

	// BatchSize is how many instances one VolumesAreAttached or
	// InstanceVolumes call may cover (at least 1).
	BatchSize() int
}
