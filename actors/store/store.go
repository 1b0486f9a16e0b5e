package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// ErrInjected is returned by writes that a test made fail.
var ErrInjected = errors.New("store: injected write failure")

// ErrInvalidOp is wrapped by Apply's refusal of a malformed batch; a refused
// batch changes nothing.
var ErrInvalidOp = errors.New("store: invalid op")

// VolumeSpec is a volume of the desired state.
type VolumeSpec struct {
	ID   cloud.VolumeID
	Mode cloud.AccessMode
	// ReadOnly, with Mode cloud.MultiNode, makes the volume ReadOnlyMany:
	// attached as any multi-node volume, and published read-only to every
	// workload that uses it, whatever the workload asks. It is part of the
	// access mode, so it is fixed when the volume is created too.
	ReadOnly bool
	// The fields below are what a storage driver (a CSI driver) needs of
	// the volume; other clouds take none (HasDriverFields). Like the
	// access mode, they are fixed when the volume is created.
	//
	// Block (volumeMode Block) asks for a raw block device: staged and
	// published as a device file, with no file system. FsType and
	// MountOptions are then empty.
	Block bool
	// FsType is the file system to mount ("": tether's default, ext4).
	FsType string
	// MountOptions are the options of its mounts (CSI mount_flags).
	MountOptions []string
	// VolumeAttributes are the volume_context the driver returned when
	// it created the volume, handed back with every publish and stage.
	VolumeAttributes map[string]string
	// SecretRef names the volume's secrets file under the data directory
	// (csi-secrets/<SecretRef>.json): only the name is stored, never the
	// secrets, which are read when a call needs them.
	SecretRef string
	// ObjectUID: see ObjectUID's doc. The store assigns it.
	ObjectUID string
}

// HasDriverFields reports whether v sets any field only a storage driver
// takes (Block, FsType, MountOptions, VolumeAttributes, SecretRef).
func (v VolumeSpec) HasDriverFields() bool {
	return v.Block || v.FsType != "" || len(v.MountOptions) > 0 || len(v.VolumeAttributes) > 0 || v.SecretRef != ""
}

// SameDriverFields reports whether a and b set the same driver fields
// (nil and empty alike).
func SameDriverFields(a, b VolumeSpec) bool {
	return a.Block == b.Block && a.FsType == b.FsType && slices.Equal(a.MountOptions, b.MountOptions) &&
		maps.Equal(a.VolumeAttributes, b.VolumeAttributes) && a.SecretRef == b.SecretRef
}

// Clone returns a copy of v that shares nothing with it; empty
// MountOptions and VolumeAttributes become nil (the file's form: they are
// left out of it when empty).
func (v VolumeSpec) Clone() VolumeSpec {
	v.MountOptions = slices.Clone(v.MountOptions)
	if len(v.MountOptions) == 0 {
		v.MountOptions = nil
	}
	v.VolumeAttributes = maps.Clone(v.VolumeAttributes)
	if len(v.VolumeAttributes) == 0 {
		v.VolumeAttributes = nil
	}
	return v
}

// NodeSpec is a node of the desired state.
type NodeSpec struct {
	Name cloud.NodeName
	// ObjectUID: see ObjectUID's doc. The store assigns it.
	ObjectUID string
}

// Workload runs on one node and uses volumes there.
type Workload struct {
	// UID is the workload's NAME (historical: messages call it
	// workload_uid); the identity of one incarnation is ObjectUID.
	UID     string
	Node    cloud.NodeName
	Volumes []cloud.VolumeID
	// ReadOnly lists the volumes (of Volumes) the workload mounts read-only.
	ReadOnly []cloud.VolumeID
	// Seq orders workloads by creation; the store assigns it.
	Seq uint64
	// ObjectUID: see ObjectUID's doc. The store assigns it.
	ObjectUID string
}

// Op is one change of the desired state; exactly one field is set. An
// empty ID or name counts as unset, so it cannot be deleted or stored.
type Op struct {
	PutVolume      *VolumeSpec
	DeleteVolume   cloud.VolumeID
	PutNode        *NodeSpec
	DeleteNode     cloud.NodeName
	PutWorkload    *Workload
	DeleteWorkload string
}

// check validates op on its own: no op depends on the store's state, so a
// batch that passes checkOps cannot fail half-way for a reason of its own.
func (op Op) check() error {
	set := 0
	for _, isSet := range []bool{
		op.PutVolume != nil, op.DeleteVolume != "",
		op.PutNode != nil, op.DeleteNode != "",
		op.PutWorkload != nil, op.DeleteWorkload != "",
	} {
		if isSet {
			set++
		}
	}
	switch {
	case set != 1:
		return fmt.Errorf("%d fields set, want exactly 1", set)
	case op.PutVolume != nil && op.PutVolume.ID == "":
		return errors.New("volume without an ID")
	case op.PutNode != nil && op.PutNode.Name == "":
		return errors.New("node without a name")
	case op.PutWorkload != nil && op.PutWorkload.UID == "":
		return errors.New("workload without a UID")
	}
	return nil
}

// checkOps validates a batch before anything is written.
func checkOps(ops []Op) error {
	for i, op := range ops {
		if err := op.check(); err != nil {
			return fmt.Errorf("%w %d: %w", ErrInvalidOp, i, err)
		}
	}
	return nil
}

// Store is what the controller needs. Every method is safe for concurrent
// use and returns copies. Writes are atomic: a failed write changes nothing.
type Store interface {
	// Revision increases by 1 with every successful Apply (the single-op
	// writes of the desired state below are each one Apply); node status
	// writes leave it alone. Read it BEFORE a snapshot: changes told with a
	// higher revision are newer than the snapshot.
	Revision() (uint64, error)

	// Apply performs ops in order, atomically: all of them or none. A
	// failure (a malformed op, see Op and ErrInvalidOp, or a failed write)
	// changes nothing, Revision included. An empty batch still counts as
	// one write.
	Apply(ops []Op) error

	// Puts of volumes and nodes assign ObjectUID as PutWorkload does.
	PutVolume(VolumeSpec) error
	DeleteVolume(cloud.VolumeID) error
	Volume(cloud.VolumeID) (VolumeSpec, bool, error)
	// VolumesOf reads the volumes of ids that exist, at once (one read:
	// a caller that needs a few volumes pays one round trip, not one
	// each).
	VolumesOf(ids []cloud.VolumeID) (map[cloud.VolumeID]VolumeSpec, error)
	Volumes() ([]VolumeSpec, error)

	PutNode(NodeSpec) error
	DeleteNode(cloud.NodeName) error
	Node(cloud.NodeName) (NodeSpec, bool, error)
	Nodes() ([]NodeSpec, error)

	// PutWorkload creates or replaces a workload; a replaced workload keeps
	// its Seq and ObjectUID.
	PutWorkload(Workload) error
	DeleteWorkload(uid string) error
	Workload(uid string) (Workload, bool, error)
	Workloads() ([]Workload, error)
	// VolumesAfter, NodesAfter and WorkloadsAfter list one page in name
	// order (bytewise): the objects named after after ("": from the
	// first), at most limit of them (limit <= 0: all). A page resumes
	// after the last name of the one before, whatever changed between.
	VolumesAfter(after cloud.VolumeID, limit int) ([]VolumeSpec, error)
	NodesAfter(after cloud.NodeName, limit int) ([]NodeSpec, error)
	WorkloadsAfter(after string, limit int) ([]Workload, error)
	// WorkloadsOn lists the workloads scheduled on a node, by Seq.
	WorkloadsOn(cloud.NodeName) ([]Workload, error)
	// DesiredNodes lists the nodes whose workloads use vol, in the order
	// the workloads were created, without repeats.
	DesiredNodes(cloud.VolumeID) ([]cloud.NodeName, error)

	NodeStatus(cloud.NodeName) (nodestatus.Status, bool, error)
	// PutNodeStatus is PutNodeStatusAt with epoch 0: unfenced.
	PutNodeStatus(nodestatus.Status) error
	// PutNodeStatusAt replaces the status of st.Name if epoch is 0
	// (unfenced) or the latest claim of NodeOwner(st.Name), checked
	// atomically with the write; else it returns an error wrapping
	// ErrFenced and writes nothing. It keeps nothing of st once it
	// returns (it encodes or copies it): the node actor hands it its live
	// status, not a copy, and changes it afterwards.
	PutNodeStatusAt(st nodestatus.Status, epoch uint64) error
	NodeStatuses() ([]nodestatus.Status, error)
	// StatusesWithVolume returns the statuses that list vol in
	// VolumesAttached, VolumesInUse or VolumesDetaching (a volume actor's
	// rebuild).
	StatusesWithVolume(vol cloud.VolumeID) ([]nodestatus.Status, error)

	Intents
	Fences
}

// RemoteReads says whether each read of s is a round trip to a server
// (etcd): then a batch had better read whole tables once than each object
// it names; in one process (Bolt, Memory) the other way round, since a
// whole-table read per batch makes a fleet's chunked applies quadratic.
func RemoteReads(s Store) bool {
	r, ok := s.(interface{ RemoteReads() bool })
	return ok && r.RemoteReads()
}
