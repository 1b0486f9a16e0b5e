package reconciler

import "time"

// Event is an input to Step.
type Event interface{ isEvent() }

// Restored starts the machine from the disk scan. Running lists the calls
// of earlier incarnations still running when the scan began: what the scan
// saw of their volumes is unreliable, and those volumes are not operated on
// before the calls return (an OpDone with their numbers).
type Restored struct {
	Stages    map[VolumeID]Found
	Publishes map[PubKey]Found
	Running   map[VolumeID]Running
}

// DesiredChanged replaces the workloads on this node. Revision orders
// snapshots of the desired state: an older one arriving after a newer one
// is ignored (0: unordered).
type DesiredChanged struct {
	Workloads []Workload
	Revision  uint64
}

// StatusChanged is the controller's persisted node status. InUseSeq is
// the sequence number of the last VolumesInUse report the controller had
// applied when it sent this status.
type StatusChanged struct {
	Attached map[VolumeID]string // volume -> device path
	InUse    map[VolumeID]bool
	InUseSeq uint64
}

// OpDone is the result of a mount operation, when its call returns (even
// long after its deadline).
type OpDone struct {
	Volume VolumeID
	Op     uint64
	Err    string // "" on success
	// Terminal: the failure will not go away by trying again (a CSI
	// plugin's INVALID_ARGUMENT): the next try waits the backoff's cap.
	Terminal bool
}

// Tick re-evaluates timers.
type Tick struct{}

func (Restored) isEvent()       {}
func (DesiredChanged) isEvent() {}
func (StatusChanged) isEvent()  {}
func (OpDone) isEvent()         {}
func (Tick) isEvent()           {}

// Effect is an output of Step, carried out in order.
type Effect interface{ isEffect() }

type (
	// ReportInUse sends the full VolumesInUse list (sorted) to the
	// controller, numbered by Seq. It comes BEFORE any Stage of a newly
	// wanted volume, which in addition waits for a status that echoes this
	// Seq (I3): an older status may still show a volume in use that the
	// controller has since been told is not.
	ReportInUse struct {
		Volumes []VolumeID
		Seq     uint64
	}
	// Stage mounts the attached device at the node's global mount.
	Stage struct {
		Volume VolumeID
		Device string
		Op     uint64
	}
	// Unstage removes the global mount.
	Unstage struct {
		Volume VolumeID
		Op     uint64
	}
	// Publish mounts the global mount into the workload's directory.
	Publish struct {
		Volume   VolumeID
		UID      string
		ReadOnly bool
		Op       uint64
	}
	// Unpublish removes the workload's mount.
	Unpublish struct {
		Volume VolumeID
		UID    string
		Op     uint64
	}
	// Record is an event for operators.
	Record struct {
		Type     string
		Workload string
		Volume   VolumeID
		Warning  bool
		Message  string
	}
	// WakeAt asks for a Tick at At.
	WakeAt struct{ At time.Time }
)

func (ReportInUse) isEffect() {}
func (Stage) isEffect()       {}
func (Unstage) isEffect()     {}
func (Publish) isEffect()     {}
func (Unpublish) isEffect()   {}
func (Record) isEffect()      {}
func (WakeAt) isEffect()      {}
