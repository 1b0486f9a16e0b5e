package reconciler

import (
	"fmt"
	"time"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/cloud"
)

type VolumeID = cloud.VolumeID

// Use is one volume of a workload.
type Use struct {
	Volume   VolumeID
	ReadOnly bool
}

// Workload is a workload scheduled on this node.
type Workload struct {
	UID     string
	Volumes []Use
}

// Config holds the timing rules.
type Config struct {
	// WaitForAttachAndMount: a workload whose volumes are not all mounted
	// this long after it arrived gets a WaitForAttachTimeout event.
	WaitForAttachAndMount time.Duration
	Backoff               backoff.Policy
	Rand                  func() float64
	// BreakMountBeforeInUse is a TEST-ONLY hook that breaks I3 on purpose:
	// the agent mounts what VolumesAttached lists without waiting for the
	// controller to have heard its VolumesInUse report, and reports a
	// volume in use only once something of it is mounted. It exists so that
	// tests can prove the invariant checkers catch an I3 violation. Never
	// set it elsewhere.
	BreakMountBeforeInUse bool
	// BreakStaleStatus is a TEST-ONLY hook that breaks I3 on purpose: the
	// agent keeps acting on the VolumesAttached of the status before the
	// last one it received, as an agent reading a stale copy would: a
	// volume the last status withdrew still counts as attached, at its
	// old device, until the next status. It exists so that tests can
	// prove the checkers judge I3 against the status the agent had
	// received when it acted. Never set it elsewhere.
	BreakStaleStatus bool
	// OpTimeout bounds one mount call: past it, the call is reported
	// failed (timed out) and its volume backs off, but the volume is not
	// operated on again before the call has actually returned. 0: no
	// deadline (the node agent's shell sets it from its own OpTimeout).
	OpTimeout time.Duration
}

// DefaultConfig is Kubernetes' values.
func DefaultConfig() Config {
	return Config{WaitForAttachAndMount: 2*time.Minute + 3*time.Second, Backoff: backoff.Default}
}

// Event types.
const (
	EventSuccessfulMount = "SuccessfulMountVolume"
	EventFailedMount     = "FailedMount"
	EventFailedUnmount   = "FailedUnmount"
	EventWaitTimeout     = "WaitForAttachTimeout"
	EventReconstructed   = "Reconstructed"
	// EventOpReturned: a mount call that had timed out (or that an earlier
	// incarnation started) has returned; its volume is operated on again.
	EventOpReturned = "VolumeOperationReturned"
)

// OpKind is the kind of a mount call.
type OpKind int

// Kinds of mount calls, one per effect that starts one.
const (
	OpStage OpKind = iota
	OpUnstage
	OpPublish
	OpUnpublish
)

func (k OpKind) String() string {
	switch k {
	case OpStage:
		return "stage"
	case OpUnstage:
		return "unstage"
	case OpPublish:
		return "publish"
	case OpUnpublish:
		return "unpublish"
	}
	return fmt.Sprintf("OpKind(%d)", int(k))
}

// Mount state of a stage or publish.
type MountState int

const (
	Pending   MountState = iota + 1 // an operation is in flight
	Mounted                         // done and working
	Uncertain                       // failed, interrupted or found half-done on disk
)

func (s MountState) String() string {
	switch s {
	case Pending:
		return "Pending"
	case Mounted:
		return "Mounted"
	case Uncertain:
		return "Uncertain"
	}
	return "?"
}

// Found is what a disk scan reports of one mount.
type Found struct {
	Mounted bool // a working mount; false: half-done (Partial)
	// Hung: the scan gave up waiting for the mount's state (a hung mount,
	// typically); it is treated as half-done, and reported.
	Hung bool
}

// Running is a mount call that an earlier incarnation of the agent (in the
// same process) started and that has not returned yet: it still holds its
// volume.
type Running struct {
	Op    uint64 // the number the earlier incarnation gave it
	Kind  OpKind
	UID   string // publishes and unpublishes only
	Since time.Time
}

// PubKey names one publish: a volume for a workload.
type PubKey struct {
	UID    string
	Volume VolumeID
}
