package process

// The loop cloud as an Account. cloud/loop is a cloud.Provider with the
// sim's administration; what tether asks of a cloud account beyond it is
// added here, kept in a file of tether's own next to the cloud's directory
// (<data>/loop-account.json, written whole and atomically before a change
// returns):
//
//   - the owner tag (identity.go);
//   - the "uncommitted" tag of the disks an apply made before it committed
//     (bootstrap/operator/api's provisioning): a disk is tagged before it is
//     created and untagged after its apply committed, so a crash can only
//     leave a tag on a disk that does not exist (harmless: Uncommitted
//     reports a disk only) or on a disk that was never committed, never
//     the other way round;
//   - a size for the disks tether creates (Config.Loop.VolumeSize), an
//     ext4 filesystem on the image of each ReadOnlyMany disk, made before
//     the disk exists (formatImage: its devices are read-only, so no node
//     could format it), and the refusal of ReadWriteMany ones
//     (errReadWriteMany);
//   - counters of the provider calls, and observers of attachment changes
//     (the demo's invariant checker).

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/loop"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/mount"
)

// Under the data directory, with the loop cloud.
const (
	// LoopDir is the loop cloud's own directory (its state, lock and
	// images).
	LoopDir = "loop"
	// LoopAccountFile holds what tether keeps about the loop cloud's
	// account: the owner tag and the uncommitted disks.
	LoopAccountFile = "loop-account.json"
)

// DefaultLoopVolumeSize is the size of the image of each disk tether
// creates on the loop cloud: sparse, it takes space only as it is
// written.
const DefaultLoopVolumeSize = 64 << 20

// LoopConfig configures the loop cloud.
type LoopConfig struct {
	// VolumeSize is the size in bytes of each disk tether creates: a
	// positive multiple of 512 (0: DefaultLoopVolumeSize).
	VolumeSize int64
	// AttachLimit is the attach limit of new instances (0: the loop
	// cloud's default, as the sim's).
	AttachLimit int
}

// accountState is the content of LoopAccountFile.
type accountState struct {
	Version     int              `json:"version"`
	Tag         string           `json:"tag,omitempty"`
	Uncommitted []cloud.VolumeID `json:"uncommitted,omitempty"` // sorted
}

// loopAccount is the loop cloud as an Account. The methods it does not
// define are the loop cloud's own.
type loopAccount struct {
	*loop.Cloud
	size int64
	path string // LoopAccountFile

	mu    sync.Mutex // guards state and its file; held across disk changes
	state accountState

	// changes serializes the changes that observers hear of with their
	// notification (changed).
	changes   sync.Mutex
	observers atomic.Pointer[[]func(sim.Change)]

	attach, detach, verify atomic.Int64
}

var (
	_ Account             = (*loopAccount)(nil)
	_ cloud.ReadOnlyDisks = (*loopAccount)(nil) // the loop cloud's VolumeReadOnly
)

// openLoop opens the loop cloud under dataDir and tether's file about it.
func openLoop(dataDir string, cfg LoopConfig) (*loopAccount, error) {
	size := cfg.VolumeSize
	if size == 0 {
		size = DefaultLoopVolumeSize
	}
	if size < 0 || size%512 != 0 {
		return nil, fmt.Errorf("loop cloud: volume size %d: want a positive multiple of 512 bytes", size)
	}
	a := &loopAccount{size: size, path: filepath.Join(dataDir, LoopAccountFile), state: accountState{Version: 1}}
	if err := readAccountFile(a.path, "loop cloud", &a.state); err != nil {
		return nil, err
	}
	c, err := loop.Open(loop.Config{Dir: filepath.Join(dataDir, LoopDir), AttachLimit: cfg.AttachLimit})
	if err != nil {
		return nil, fmt.Errorf("loop cloud: %w", err)
	}
	a.Cloud = c
	return a, nil
}

// writeLocked makes next the account's state, durably. Called under mu.
func (a *loopAccount) writeLocked(next accountState) error {
	if err := writeAccountFile(a.path, "loop cloud", next); err != nil {
		return err
	}
	a.state = next
	return nil
}

// withTags returns the state with ids tagged uncommitted (tag) or not.
func (s accountState) withTags(ids []cloud.VolumeID, tag bool) accountState {
	set := map[cloud.VolumeID]bool{}
	for _, id := range s.Uncommitted {
		set[id] = true
	}
	for _, id := range ids {
		set[id] = tag
	}
	s.Uncommitted = nil
	for id, on := range set {
		if on {
			s.Uncommitted = append(s.Uncommitted, id)
		}
	}
	slices.Sort(s.Uncommitted)
	return s
}

// Tag implements owner.
func (a *loopAccount) Tag() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state.Tag
}

// SetTag implements owner: durable before it returns.
func (a *loopAccount) SetTag(tag string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := a.state
	next.Tag = tag
	return a.writeLocked(next)
}

// Inventory implements owner: the loop cloud's, each attachment named by
// the node of its instance.
func (a *loopAccount) Inventory() sim.Inventory {
	in := a.Cloud.Inventory()
	var inv sim.Inventory
	nodes := map[cloud.InstanceID]cloud.NodeName{}
	for _, i := range in.Instances {
		nodes[i.ID] = i.Node
		inv.Instances = append(inv.Instances, sim.InventoryInstance{ID: i.ID, Node: i.Node, Running: i.Running})
	}
	for _, v := range in.Volumes {
		iv := sim.InventoryVolume{ID: v.ID, Mode: v.Mode, ReadOnly: v.ReadOnly}
		for _, inst := range v.Attached {
			iv.Attached = append(iv.Attached, nodes[inst])
		}
		slices.Sort(iv.Attached)
		inv.Volumes = append(inv.Volumes, iv)
	}
	return inv
}

// AddInstances implements Account, one instance at a time.
func (a *loopAccount) AddInstances(nodes []cloud.NodeName) error {
	for _, n := range nodes {
		if _, err := a.AddInstanceChecked(n); err != nil {
			return err
		}
	}
	return nil
}

// errReadWriteMany refuses a ReadWriteMany disk on the loop cloud. Its
// disks carry ext4, which is no cluster filesystem: two machines mounting
// one read-write corrupt it, each caching and writing its metadata
// unaware of the other (and each could format it, the second erasing the
// first's data). agent.LoopDevices refuses such a second mount too; this
// says so when the volume is applied, not at every failed mount. A
// ReadOnlyMany disk is safe: every device of it is read-only.
func errReadWriteMany(id cloud.VolumeID) error {
	return fmt.Errorf("%w: volume %q is ReadWriteMany, but the loop cloud's disks carry ext4, which is not a cluster filesystem: "+
		"two machines mounting one read-write corrupt it. --cloud loop takes ReadWriteOnce volumes, and ReadOnlyMany ones (every machine mounts them read-only)",
		controller.ErrInvalid, id)
}

// CreateVolume implements Account: an exclusive disk of the configured
// size (a multi-node one would be ReadWriteMany, refused:
// errReadWriteMany; ReadOnlyMany disks are made by
// CreateVolumesUncommitted), whose uncommitted tag (a leftover of a
// crash) is removed first.
func (a *loopAccount) CreateVolume(id cloud.VolumeID, mode cloud.AccessMode) error {
	if mode != cloud.Exclusive {
		return errReadWriteMany(id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.Contains(a.state.Uncommitted, id) {
		if err := a.writeLocked(a.state.withTags([]cloud.VolumeID{id}, false)); err != nil {
			return err
		}
	}
	return a.Cloud.CreateVolume(id, mode, a.size)
}

// CreateVolumesUncommitted implements cloud.Provisioner: the disks that do not
// exist yet are tagged, then created (all or nothing; a ReadWriteMany one
// refuses them all: errReadWriteMany); those that exist are left as they
// are, tags included. A ReadOnlyMany disk's devices are all read-only,
// and its image carries ext4 before the disk exists (formatImage).
func (a *loopAccount) CreateVolumesUncommitted(vols []cloud.VolumeSpec) error {
	for _, v := range vols {
		if v.Mode == cloud.MultiNode && !v.ReadOnly {
			return errReadWriteMany(v.ID)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var specs []loop.VolumeSpec
	var ids []cloud.VolumeID
	for _, v := range vols {
		if _, _, ok := a.Volume(v.ID); ok || slices.Contains(ids, v.ID) {
			continue
		}
		spec := loop.VolumeSpec{ID: v.ID, Mode: v.Mode, Size: a.size, ReadOnly: v.ReadOnly}
		if v.ReadOnly {
			spec.Prepare = formatImage
		}
		specs = append(specs, spec)
		ids = append(ids, v.ID)
	}
	if len(specs) == 0 {
		return nil
	}
	before := a.state
	if err := a.writeLocked(before.withTags(ids, true)); err != nil {
		return err
	}
	if err := a.Cloud.CreateVolumes(specs); err != nil {
		// Nothing was created: the tags go again (left behind, they
		// name no disk, and do no harm).
		return errors.Join(err, a.writeLocked(before))
	}
	return nil
}

// CommitVolumes implements cloud.Provisioner: the tags of ids go, in one write;
// an unknown volume fails them all with cloud.ErrNotFound.
func (a *loopAccount) CommitVolumes(ids []cloud.VolumeID) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	tagged := false
	for _, id := range ids {
		if _, _, ok := a.Volume(id); !ok {
			return fmt.Errorf("loop cloud: commit volume %s: %w", id, cloud.ErrNotFound)
		}
		tagged = tagged || slices.Contains(a.state.Uncommitted, id)
	}
	if !tagged {
		return nil
	}
	return a.writeLocked(a.state.withTags(ids, false))
}

// CommitVolume implements cloud.Provisioner.
func (a *loopAccount) CommitVolume(id cloud.VolumeID) error {
	return a.CommitVolumes([]cloud.VolumeID{id})
}

// Uncommitted implements cloud.Provisioner: the disk exists and is tagged.
func (a *loopAccount) Uncommitted(id cloud.VolumeID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _, ok := a.Volume(id)
	return ok && slices.Contains(a.state.Uncommitted, id)
}

// DeleteVolume implements cloud.Provisioner: the disk goes (refused while
// attached), then its tag.
func (a *loopAccount) DeleteVolume(id cloud.VolumeID) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.Cloud.DeleteVolume(id); err != nil {
		return err
	}
	if !slices.Contains(a.state.Uncommitted, id) {
		return nil
	}
	return a.writeLocked(a.state.withTags([]cloud.VolumeID{id}, false))
}

// Devices implements Account: device paths are checked against the cloud
// and the kernel (agent.LoopDevices).
func (a *loopAccount) Devices(n cloud.NodeName) agent.Devices {
	return agent.LoopDevices{Cloud: a.Cloud, Node: n}
}

// formatImage makes the ext4 filesystem of a new ReadOnlyMany disk on its
// image (loop.VolumeSpec.Prepare: no device is bound to it yet, and the
// disk exists only once it is done), as a node's stage formats a blank
// read-write device (mkfs.ext4 -q -m 0). Standard input is the null
// device: mke2fs asks nothing then.
func formatImage(image string) error {
	path, err := mount.FindTool("mkfs.ext4")
	if err != nil {
		return err
	}
	out, err := exec.Command(path, "-q", "-m", "0", "--", image).CombinedOutput()
	if err != nil {
		return fmt.Errorf("loop cloud: mkfs.ext4 %s: %w: %s", image, err, bytes.TrimSpace(out))
	}
	return nil
}
