// Package store is the controller's source of truth: the desired state
// (volumes, nodes, workloads) and the persisted node statuses. Actors rebuild
// from it on every (re)start. The interface is narrow so that a durable
// embedded database and an etcd backend can implement it; Memory is the
// in-process implementation. A store never calls actors or the cloud.
package store

import (
	"errors"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// ErrInjected is returned by writes that a test made fail.
var ErrInjected = errors.New("store: injected write failure")

// VolumeSpec is a volume of the desired state.
type VolumeSpec struct {
	ID   cloud.VolumeID
	Mode cloud.AccessMode
}

// NodeSpec is a node of the desired state.
type NodeSpec struct {
	Name cloud.NodeName
}

// Workload runs on one node and uses volumes there.
type Workload struct {
	UID     string
	Node    cloud.NodeName
	Volumes []cloud.VolumeID
	// ReadOnly lists the volumes (of Volumes) the workload mounts read-only.
	ReadOnly []cloud.VolumeID
	// Seq orders workloads by creation; the store assigns it.
	Seq uint64
}

// Store is what the controller needs. Every method is safe for concurrent
// use and returns copies. Writes are atomic: a failed write changes nothing.
type Store interface {
	// Revision increases with every write of the desired state (volumes,
	// nodes, workloads). Read it BEFORE a snapshot: changes told with a
	// higher revision are newer than the snapshot.
	Revision() (uint64, error)

	PutVolume(VolumeSpec) error
	DeleteVolume(cloud.VolumeID) error
	Volume(cloud.VolumeID) (VolumeSpec, bool, error)
	Volumes() ([]VolumeSpec, error)

	PutNode(NodeSpec) error
	DeleteNode(cloud.NodeName) error
	Node(cloud.NodeName) (NodeSpec, bool, error)
	Nodes() ([]NodeSpec, error)

	// PutWorkload creates or replaces a workload; a replaced workload keeps
	// its Seq.
	PutWorkload(Workload) error
	DeleteWorkload(uid string) error
	Workload(uid string) (Workload, bool, error)
	Workloads() ([]Workload, error)
	// WorkloadsOn lists the workloads scheduled on a node, by Seq.
	WorkloadsOn(cloud.NodeName) ([]Workload, error)
	// DesiredNodes lists the nodes whose workloads use vol, in the order
	// the workloads were created, without repeats.
	DesiredNodes(cloud.VolumeID) ([]cloud.NodeName, error)

	NodeStatus(cloud.NodeName) (nodestatus.Status, bool, error)
	PutNodeStatus(nodestatus.Status) error
	NodeStatuses() ([]nodestatus.Status, error)
	// StatusesWithVolume returns the statuses that list vol in
	// VolumesAttached, VolumesInUse or VolumesDetaching (a volume actor's
	// rebuild).
	StatusesWithVolume(vol cloud.VolumeID) ([]nodestatus.Status, error)
}
