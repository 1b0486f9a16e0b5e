package store

import (
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// The records are Bolt's on-disk format: JSON with explicit names, apart
// from the domain types so that renaming a Go field does not change the
// file. Slices keep nil and empty apart (no omitempty), as Memory does.

// ObjectUID ("objectUid") is missing from files written before UIDs
// existed: OpenBolt assigns it (assignMissingUIDs).

// readOnly is left out when false: records written before ReadOnlyMany
// existed read as read-write (what ReadOnlyMany was then stored as), and
// the records of other volumes are the bytes they always were, so an
// older tether reads them as before. The fields a storage driver needs
// (block to secretRef) are left out when unset likewise: empty
// mountOptions and volumeAttributes read back nil (VolumeSpec.Clone's
// form). secretRef is a file's name, never a secret.
type volumeRecord struct {
	ID               cloud.VolumeID    `json:"id"`
	Mode             int               `json:"mode"`
	ReadOnly         bool              `json:"readOnly,omitempty"`
	Block            bool              `json:"block,omitempty"`
	FsType           string            `json:"fsType,omitempty"`
	MountOptions     []string          `json:"mountOptions,omitempty"`
	VolumeAttributes map[string]string `json:"volumeAttributes,omitempty"`
	SecretRef        string            `json:"secretRef,omitempty"`
	ObjectUID        string            `json:"objectUid"`
}

type nodeRecord struct {
	Name      cloud.NodeName `json:"name"`
	ObjectUID string         `json:"objectUid"`
}

type workloadRecord struct {
	UID       string           `json:"uid"`
	Node      cloud.NodeName   `json:"node"`
	Volumes   []cloud.VolumeID `json:"volumes"`
	ReadOnly  []cloud.VolumeID `json:"readOnly"`
	Seq       uint64           `json:"seq"`
	ObjectUID string           `json:"objectUid"`
}

// statusRecord: a zero NotReadySince round-trips as the zero time; maps come
// back empty, never nil (Status.Clone's form).
type statusRecord struct {
	Name             cloud.NodeName            `json:"name"`
	VolumesAttached  map[cloud.VolumeID]string `json:"volumesAttached"`
	VolumesInUse     map[cloud.VolumeID]bool   `json:"volumesInUse"`
	VolumesDetaching map[cloud.VolumeID]bool   `json:"volumesDetaching"`
	Ready            bool                      `json:"ready"`
	NotReadySince    time.Time                 `json:"notReadySince"`
	OutOfService     bool                      `json:"outOfService"`
	InUseSeq         uint64                    `json:"inUseSeq"`
	// Left out when unset: records written before agents reported an
	// instance read the same.
	InstanceID cloud.InstanceID `json:"instanceId,omitempty"`
	MaxVolumes int64            `json:"maxVolumes,omitempty"`
}

// spec: r is freshly decoded, so its slice and map are the caller's own.
func (r volumeRecord) spec() VolumeSpec {
	return VolumeSpec{ID: r.ID, Mode: cloud.AccessMode(r.Mode), ReadOnly: r.ReadOnly, Block: r.Block, FsType: r.FsType,
		MountOptions: r.MountOptions, VolumeAttributes: r.VolumeAttributes, SecretRef: r.SecretRef, ObjectUID: r.ObjectUID}.Clone()
}

// toVolumeRecord: the record is encoded before v can change, so it may
// share v's slice and map.
func toVolumeRecord(v VolumeSpec) volumeRecord {
	return volumeRecord{ID: v.ID, Mode: int(v.Mode), ReadOnly: v.ReadOnly, Block: v.Block, FsType: v.FsType,
		MountOptions: v.MountOptions, VolumeAttributes: v.VolumeAttributes, SecretRef: v.SecretRef, ObjectUID: v.ObjectUID}
}

// The conversions below stop compiling when a domain type gains a field, so
// a new field cannot be silently left out of the file.

func (r nodeRecord) spec() NodeSpec { return NodeSpec(r) }

func toWorkloadRecord(w Workload) workloadRecord { return workloadRecord(w) }

// workload: r is freshly decoded, so its slices are the caller's own.
func (r workloadRecord) workload() Workload { return Workload(r) }

func toStatusRecord(s nodestatus.Status) statusRecord { return statusRecord(s) }

func (r statusRecord) status() nodestatus.Status { return nodestatus.Status(r).Clone() }

// hasVolume is StatusesWithVolume's filter.
func (r statusRecord) hasVolume(vol cloud.VolumeID) bool {
	_, attached := r.VolumesAttached[vol]
	return attached || r.VolumesInUse[vol] || r.VolumesDetaching[vol]
}
