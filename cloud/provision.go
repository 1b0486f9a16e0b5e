package cloud

// VolumeSpec is a disk to create: its ID and access mode.
type VolumeSpec struct {
	ID   VolumeID
	Mode AccessMode
	// ReadOnly asks for the disk of a ReadOnlyMany volume (with MultiNode).
	// A cloud whose devices can be read-only keeps it (the loop cloud's
	// account binds every device of such a disk read-only); one whose
	// cannot ignores it (the sim's disks are directories, kept from
	// writers by the nodes' read-only publishes, and its remote admin
	// does not carry the flag).
	ReadOnly bool
}

// Disk is what a Provisioner says of one disk.
type Disk struct {
	Mode        AccessMode
	AttachedTo  []InstanceID // sorted
	Uncommitted bool
}

// Provisioner is a cloud account's administration of instances and disks,
// as the operator API needs it on any cloud (sim, loop, CSI, or a sim
// served by another process): it provisions instances for new nodes and
// disks for new volumes, removes them when the apply that created them
// fails, reads a disk's mode (fixed at creation) and where it is
// attached, and terminates and starts instances. A cloud that cannot do
// one of these says so with an error (a CSI driver's instances are its
// node plugins' machines: they are neither terminated nor started).
type Provisioner interface {
	InstanceOf(node NodeName) (InstanceID, bool)
	Running(inst InstanceID) bool
	Terminate(inst InstanceID) error
	Start(inst InstanceID) error
	AddInstanceChecked(node NodeName) (InstanceID, error)
	// CreateVolumesUncommitted creates disks tagged "uncommitted" (an
	// existing one is left as it is), all or nothing, with one durable
	// write; CommitVolumes (CommitVolume) removes the tags once the apply
	// that needed them has committed (the volume is deleted).
	CreateVolumesUncommitted(vols []VolumeSpec) error
	CommitVolumes(ids []VolumeID) error
	CommitVolume(id VolumeID) error
	Uncommitted(id VolumeID) bool
	Volume(id VolumeID) (mode AccessMode, attachedTo []InstanceID, ok bool)
	DeleteVolume(id VolumeID) error // refuses an attached disk
	Delete(inst InstanceID) error
}

// DiskReader is implemented by a Provisioner that describes many disks in
// one call (the sim, and cloud/remote.Client as one request per 10,000):
// an apply of a fleet's volumes otherwise asks a remote cloud about each
// disk twice (Volume, Uncommitted). An error wrapping
// errors.ErrUnsupported (a cloud service from before Disks) makes the
// caller ask disk by disk.
type DiskReader interface {
	Disks(ids []VolumeID) (map[VolumeID]Disk, error)
}

// ReadOnlyDisks is implemented by a Provisioner whose disks are made
// read-only or read-write for good (the loop cloud binds every device of
// a ReadOnlyMany disk read-only): whether a disk is read-only is then
// part of its mode. Without it, a multi-node disk serves ReadWriteMany
// and ReadOnlyMany alike (the sim's, whose read-only volumes are kept so
// by the nodes' read-only publishes).
type ReadOnlyDisks interface {
	// VolumeReadOnly reports whether disk id is read-only; ok is false
	// when there is no such disk.
	VolumeReadOnly(id VolumeID) (readOnly, ok bool)
}
