package nodestatus

import (
	"maps"
	"time"

	"github.com/tether/tether/cloud"
)

// Status is the persisted node status.
type Status struct {
	Name            cloud.NodeName
	VolumesAttached map[cloud.VolumeID]string // volume -> device path
	VolumesInUse    map[cloud.VolumeID]bool
	// VolumesDetaching: prepared for detach (out of VolumesAttached) and
	// not yet known detached. A rebuilt volume actor fences these nodes: a
	// detach of its earlier incarnation may still land there.
	VolumesDetaching map[cloud.VolumeID]bool
	Ready            bool
	NotReadySince    time.Time
	OutOfService     bool
	// InUseSeq numbers the agent report VolumesInUse came from. Agents
	// number reports increasingly across restarts, so an older report that
	// arrives late (over a network) is recognized and ignored.
	InUseSeq uint64
	// InstanceID is what the node's agent reported its machine to be to
	// the cloud (a CSI node plugin's node ID, NodeGetInfo), "" if it
	// reported none; MaxVolumes that plugin's max_volumes_per_node (0:
	// none). The controller resolves the node to it where the cloud
	// itself cannot (a CSI driver knows no node names).
	InstanceID cloud.InstanceID
	MaxVolumes int64
}

// Clone returns a deep copy.
func (s Status) Clone() Status {
	c := s
	c.VolumesAttached = maps.Clone(s.VolumesAttached)
	c.VolumesInUse = maps.Clone(s.VolumesInUse)
	c.VolumesDetaching = maps.Clone(s.VolumesDetaching)
	if c.VolumesDetaching == nil {
		c.VolumesDetaching = map[cloud.VolumeID]bool{}
	}
	if c.VolumesAttached == nil {
		c.VolumesAttached = map[cloud.VolumeID]string{}
	}
	if c.VolumesInUse == nil {
		c.VolumesInUse = map[cloud.VolumeID]bool{}
	}
	return c
}

// VolumeInfo is what a volume actor is told about this node.
type VolumeInfo struct {
	InUse         bool
	Ready         bool
	NotReadySince time.Time
	OutOfService  bool
}

// Info returns what volume vol should know about this node.
func (s Status) Info(vol cloud.VolumeID) VolumeInfo {
	return VolumeInfo{InUse: s.VolumesInUse[vol], Ready: s.Ready, NotReadySince: s.NotReadySince, OutOfService: s.OutOfService}
}

// Config: NotReadyAfter is how long without a heartbeat makes a node
// NotReady (Kubernetes: 40 s).
type Config struct {
	NotReadyAfter time.Duration
	// BreakIgnoreInUse is a TEST-ONLY hook that breaks I2 on purpose
	// (prepare a detach of a volume in use), so that tests can prove the
	// invariant checkers catch it. Never set it elsewhere.
	BreakIgnoreInUse bool
	// BreakPrepareBeforeWrite is a TEST-ONLY hook that breaks I4 on
	// purpose: a detach preparation is answered at once, without removing
	// the volume from VolumesAttached and persisting that first. Never set
	// it elsewhere.
	BreakPrepareBeforeWrite bool
}

// DefaultConfig is Kubernetes' value.
func DefaultConfig() Config { return Config{NotReadyAfter: 40 * time.Second} }

// Node is the machine. Use New, then step Restored first.
//
// It holds one copy of the status: cur, the current one. The last
// persisted status is cur with the changes made since undone (undo.go):
// a fleet's node statuses are a copy of every volume's entries, and a
// second, persisted copy at rest doubled them.
type Node struct {
	cfg Config
	cur Status
	// saved is the last persisted status but for its maps (nil): those
	// are cur's with undo undone.
	saved         Status
	undo          []change
	lastHeartbeat time.Time
	pending       []PrepareAnswer  // answered OK after Persisted, refused after PersistFailed
	attaching     []cloud.VolumeID // VolumeAttached in the write under way
}

// New returns a node machine holding an empty status for name.
func New(name cloud.NodeName, cfg Config) *Node {
	n := &Node{cfg: cfg, cur: Status{Name: name}.Clone()}
	n.markSaved()
	return n
}

// Status returns a copy of the current status.
func (n *Node) Status() Status { return n.cur.Clone() }

// View returns the current status without copying it: the caller reads
// it, never changes or keeps it, before the next Step (a copy of every map
// per message was a tenth of a fleet start's garbage).
func (n *Node) View() Status { return n.cur }

// Ready says whether the node is Ready now.
func (n *Node) Ready() bool { return n.cur.Ready }

// LastHeartbeat returns when the agent last reported.
func (n *Node) LastHeartbeat() time.Time { return n.lastHeartbeat }
