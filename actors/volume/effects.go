package volume

import "time"

// Effect is an output of Step. The shell carries effects out in order.
type Effect interface{ isEffect() }

// CallAttach: start the cloud attach (asynchronously); answer AttachDone.
type CallAttach struct {
	Node NodeName
	Op   uint64
}

// PrepareDetach: ask the node actor to remove the volume from
// VolumesAttached and persist that status; it answers DetachPrepared. This
// comes BEFORE CallDetach, which the machine emits only after
// DetachPrepared{OK: true} (I4).
type PrepareDetach struct {
	Node  NodeName
	Op    uint64
	Force string // "" or the force reason: the node actor refuses an unforced prepare of a volume in use
}

// CallDetach: start the cloud detach (asynchronously); answer DetachDone.
type CallDetach struct {
	Node  NodeName
	Op    uint64
	Force string // "" or the force reason (timeout, out-of-service)
}

// ReportAttached: add the volume to the node's VolumesAttached.
type ReportAttached struct {
	Node       NodeName
	DevicePath string
}

// ReportDetached: remove the volume from the node's VolumesAttached.
type ReportDetached struct {
	Node NodeName
}

// VerifyNode: ask the cloud whether the volume is attached to the node and
// answer Verified. Emitted when a result of an operation this instance did
// not start arrives (an operation of a previous incarnation).
type VerifyNode struct {
	Node NodeName
}

// Record: an event for operators (tether describe).
type Record struct {
	Type    string
	Node    NodeName
	Warning bool
	Message string
	// Retry is the backoff before the next try, for failures.
	Retry time.Duration
}

// WakeAt: deliver Tick at (or soon after) At.
type WakeAt struct {
	At time.Time
}

func (CallAttach) isEffect()     {}
func (PrepareDetach) isEffect()  {}
func (CallDetach) isEffect()     {}
func (ReportAttached) isEffect() {}
func (ReportDetached) isEffect() {}
func (VerifyNode) isEffect()     {}
func (Record) isEffect()         {}
func (WakeAt) isEffect()         {}
