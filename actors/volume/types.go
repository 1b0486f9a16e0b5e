package volume

import (
	"fmt"
	"time"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/cloud"
)

// State of one attachment.
type State int

const (
	Attaching State = iota + 1 // CallAttach in flight
	Attached                   // confirmed by the cloud; reported in the node's VolumesAttached
	Uncertain                  // an operation failed or its outcome is unknown; not reported
	Detaching                  // PrepareDetach or CallDetach in flight
)

func (s State) String() string {
	switch s {
	case Attaching:
		return "Attaching"
	case Attached:
		return "Attached"
	case Uncertain:
		return "Uncertain"
	case Detaching:
		return "Detaching"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Attachment is the state of the volume on one node.
type Attachment struct {
	State      State
	DevicePath string
	// Since is when the state last changed; cloud truth older than this is
	// stale and ignored.
	Since time.Time
	// DetachRequested is when the node stopped being desired (zero while
	// desired).
	DetachRequested time.Time

	// Fence: until this time no operation starts on this node and no truth
	// older than it counts. Set at rebuild for a node where an earlier
	// incarnation may still have a detach in flight (its calls end by
	// CloudTimeout); at the fence the machine asks the cloud (VerifyNode).
	Fence time.Time

	op       uint64    // operation in flight (Attaching, Detaching)
	unacked  time.Time // Attached: ReportAttached sent then, not yet recorded by the node
	prepared bool      // Detaching: node status persisted, CallDetach sent
	force    string    // Detaching: force reason, "" when not forced
	prev     State     // Detaching: state to fall back to if the prepare fails
}

// NodeInfo is what the volume knows about a node, from the node actor.
type NodeInfo struct {
	InUse         bool // the node reports the volume in VolumesInUse (mounted or mounting)
	Ready         bool
	NotReadySince time.Time
	OutOfService  bool
}

// Config holds the timing rules. Zero values are not defaults: use
// DefaultConfig.
type Config struct {
	MaxWaitForUnmount  time.Duration
	DisableForceDetach bool
	// PrepareTimeout bounds the wait for DetachPrepared: a node actor that
	// died may never answer. Past it the detach counts as failed.
	PrepareTimeout time.Duration
	// CloudTimeout bounds every cloud call; a rebuilt machine fences nodes
	// with a detach of an earlier incarnation possibly in flight for this
	// long.
	CloudTimeout time.Duration
	// TruthMemory is how long a removed attachment's time is remembered to
	// reject stale truth about it.
	TruthMemory time.Duration
	Backoff     backoff.Policy
	// Rand draws the backoff jitter in [0,1); nil means no jitter.
	Rand func() float64
	// BreakIgnoreInUse is a TEST-ONLY hook that breaks I2 on purpose
	// (detach without waiting for VolumesInUse), so that tests can prove
	// the invariant checkers catch it. Never set it elsewhere.
	BreakIgnoreInUse bool
	// BreakMultiAttach is a TEST-ONLY hook that breaks I1 on purpose: an
	// exclusive volume is attached to a desired node even while it is
	// attached elsewhere. Never set it elsewhere.
	BreakMultiAttach bool
	// BreakNeverDetach is a TEST-ONLY hook that breaks I5 on purpose: no
	// detach is ever started, so attachments nobody wants stay. Never set it
	// elsewhere.
	BreakNeverDetach bool
}

// DefaultConfig is Kubernetes' values.
func DefaultConfig() Config {
	return Config{MaxWaitForUnmount: 6 * time.Minute, PrepareTimeout: 30 * time.Second, CloudTimeout: time.Minute,
		TruthMemory: 10 * time.Minute, Backoff: backoff.Default}
}

// Event types, in Kubernetes' words.
const (
	EventSuccessfulAttach   = "SuccessfulAttachVolume"
	EventFailedAttach       = "FailedAttachVolume"
	EventMultiAttach        = "Multi-Attach"
	EventSuccessfulDetach   = "SuccessfulDetachVolume"
	EventFailedDetach       = "FailedDetachVolume"
	EventForceDetach        = "ForceDetach"
	EventAttachmentLost     = "AttachmentLost"
	EventDanglingAttachment = "DanglingAttachment"
)

// NodeName and VolumeID are re-exported for brevity inside this package.
type (
	NodeName = cloud.NodeName
	VolumeID = cloud.VolumeID
)
