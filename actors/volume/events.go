package volume

import (
	"time"

	"github.com/tether/tether/cloud"
)

// Event is an input to Step.
type Event interface{ isEvent() }

// Restored starts the machine after a (re)start: the desired state from the
// store, the attachments the node statuses list, what the nodes report, and
// the targeted cloud verify (Truth nil when the verify failed).
type Restored struct {
	Mode    cloud.AccessMode
	Desired []NodeName
	Listed  map[NodeName]string // node -> device path, from VolumesAttached
	// Detaching lists the nodes whose status says a detach was prepared
	// and not known to have finished: an earlier incarnation's CallDetach
	// may still land there.
	Detaching []NodeName
	// InFlight lists the last operation an earlier incarnation recorded
	// before sending it, per node (the store's intent journal): each may
	// land until its deadline, whatever the verify says, and its outcome
	// is known only from truth asked after that deadline.
	InFlight []InFlight
	Nodes    map[NodeName]NodeInfo
	Truth    map[NodeName]bool
	AsOf     time.Time
}

// InFlight is an operation of an earlier incarnation (an attach or a
// detach: either fences the node alike) that may still land on Node until
// Deadline.
type InFlight struct {
	Node     NodeName
	Deadline time.Time
}

// DesiredChanged replaces the desired nodes (in the order they were asked for).
type DesiredChanged struct {
	Mode    cloud.AccessMode
	Desired []NodeName
}

// NodeChanged updates what the volume knows of one node.
type NodeChanged struct {
	Node NodeName
	Info NodeInfo
}

// AttachDone is the result of CallAttach.
type AttachDone struct {
	Node       NodeName
	Op         uint64
	DevicePath string
	Err        cloud.Kind
	Msg        string
}

// DetachDone is the result of CallDetach.
type DetachDone struct {
	Node NodeName
	Op   uint64
	Err  cloud.Kind
	Msg  string
}

// DetachPrepared answers PrepareDetach.
type DetachPrepared struct {
	Node NodeName
	Op   uint64
	OK   bool
	Msg  string
}

// Verified is the cloud's truth for one node as of AsOf.
type Verified struct {
	Node       NodeName
	Attached   bool
	DevicePath string
	AsOf       time.Time
}

// AttachRecorded: the node recorded the attachment reported to it.
type AttachRecorded struct {
	Node NodeName
}

// ReportFailed: the node could not record the attachment reported to it
// (its status write failed): it does not list the volume.
type ReportFailed struct {
	Node NodeName
}

// Tick re-evaluates timers (backoff expiry, force-detach deadline).
type Tick struct{}

func (Restored) isEvent()       {}
func (DesiredChanged) isEvent() {}
func (NodeChanged) isEvent()    {}
func (AttachDone) isEvent()     {}
func (DetachDone) isEvent()     {}
func (DetachPrepared) isEvent() {}
func (Verified) isEvent()       {}
func (Tick) isEvent()           {}
func (ReportFailed) isEvent()   {}
func (AttachRecorded) isEvent() {}
