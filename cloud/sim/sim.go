package sim

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/faulty"
)

// Method names a cloud.Provider call, for counters and error injection.
type Method = faulty.Method

// The provider methods of a Cloud. BatchSize is not a cloud call: it is
// neither counted, throttled nor delayed.
const (
	MethodInstanceID         = faulty.MethodInstanceID
	MethodAttach             = faulty.MethodAttach
	MethodDetach             = faulty.MethodDetach
	MethodVolumesAreAttached = faulty.MethodVolumesAreAttached
	MethodInstanceVolumes    = faulty.MethodInstanceVolumes
	MethodInstanceIDs        = faulty.MethodInstanceIDs
)

// Defaults applied by New to zero (or negative) Config fields.
const (
	DefaultBatchSize   = 50
	DefaultAttachLimit = 39
)

// Config sets up a Cloud. The zero value is a fast, unthrottled, error-free
// cloud with the default batch size and attach limit.
type Config struct {
	// Latency is added to every provider call. The caller stops waiting
	// when its ctx ends, but a call once sent is carried out all the same,
	// unless its ctx's deadline passes first (see
	// docs/storage.md#the-sim-cloud-inside).
	Latency time.Duration
	// HangMargin is how long before its deadline a hung call is sent
	// (faulty.Config.HangMargin; 0: a tenth of what is left, at most
	// 10ms).
	HangMargin time.Duration
	// Permissive makes the cloud accept whatever it is asked, as a
	// multi-attach disk would: an exclusive volume attached to another
	// instance is attached here too (and recorded, so that ground-truth
	// checkers see it). Strict (false) refuses it with
	// cloud.ErrAttachedElsewhere.
	Permissive bool
	// BatchSize is how many instances one VolumesAreAttached or
	// InstanceVolumes call may cover; default DefaultBatchSize.
	BatchSize int
	// AttachLimit is the attach limit of new instances; default
	// DefaultAttachLimit. SetAttachLimit changes one instance's.
	AttachLimit int
	// ThrottleRate is the token refill per second of one bucket shared by
	// all methods; 0 means unlimited.
	ThrottleRate float64
	// ThrottleBurst is the bucket size; default max(1, int(ThrottleRate)).
	ThrottleBurst int
	// Seed seeds the random error injection of SetErrorRate.
	Seed int64
	// Now is the clock of the throttle and of Change.Time; default time.Now.
	Now func() time.Time
	// ContentDir, when set, gives every volume a directory of content,
	// <ContentDir>/<volume>, made by CreateVolume: the "block device" a
	// node mounts (see DeviceSource). Empty: volumes have no content and
	// nothing is written to disk.
	ContentDir string
	// VirtualContent, with ContentDir, names the content directories
	// without making them: nothing is written under ContentDir, and
	// DeviceSource answers <ContentDir>/<volume> unchecked. Only for a
	// node mounter that never reads its source (mount.Memory, tether
	// bench --mounter memory): the control plane measured without the
	// machines' disks.
	VirtualContent bool
	// StatePath, when set, makes the cloud durable. It names the
	// snapshot, a JSON file; the log of the changes since that snapshot is
	// StatePath + ".log" (state.go). Open (and New) loads both, if they
	// exist, and every change of instances, volumes or attachments (and
	// of the counters) is appended to the log and fsynced before the call
	// that made it returns; changes made concurrently share one append
	// and one fsync. When the log holds more than compactMinGroups groups
	// and is larger than the snapshot, it is folded into a new snapshot,
	// written atomically (a temporary file in the same directory, fsync,
	// rename, fsync of the directory), and a new log is started; Open and
	// Close fold it too. Both files have mode 0600; the directory must
	// stay writable. A call whose change cannot be written fails with an
	// error naming the file and wrapping cloud.ErrRetryable, and its change
	// is undone (with every change queued with it or after it). Version 1
	// state files, of the single-file format, load as snapshots. Kept: instances (node, running flag, attach limit),
	// volumes (access mode), attachments (device paths), the instance ID
	// counter and Counters. Not kept: latency, throttle, injected errors,
	// observers (runtime knobs), nor the volumes' content (ContentDir is
	// on disk already). Empty: nothing is kept.
	StatePath string
}

// Cloud is an in-memory cloud.Provider, durable with Config.StatePath.
// Create it with New or Open.
type Cloud struct {
	// Faults are the knobs of its calls' faults (FailNext, SetErrorRate,
	// SetReplyLoss, SetHangRate, SetLatency, SetThrottle), drawn from
	// Config.Seed, throttled at Config.Now; the calls are carried out as
	// faulty.Plan.Run says (see docs/storage.md#the-sim-cloud-inside).
	*faulty.Faults
	batch    int              // immutable after New
	now      func() time.Time // immutable after New
	lenient  bool             // Config.Permissive; immutable after New
	mu       sync.Mutex
	defLimit int
	counters Counters
	seq      int    // instance ID counter
	tag      string // SetTag
	nodes    map[cloud.NodeName]*instance
	insts    map[cloud.InstanceID]*instance
	vols     map[cloud.VolumeID]*volume
	obs      observers
	content  string // Config.ContentDir made absolute; immutable after New
	virtual  bool   // Config.VirtualContent (with a content root)
	state    *store // nil without Config.StatePath; set by Open
	dirty    dirty  // changed since the last commit (with state only)
}

var _ cloud.Provider = (*Cloud)(nil)

type instance struct {
	id      cloud.InstanceID
	node    cloud.NodeName
	running bool
	limit   int
	devices map[cloud.VolumeID]string // attached volume -> device path
}

type volume struct {
	id          cloud.VolumeID
	mode        cloud.AccessMode
	uncommitted bool // CreateVolumeUncommitted, until CommitVolume
	attached    map[cloud.InstanceID]struct{}
}

// New returns a cloud configured by cfg: empty (no instances, no volumes)
// unless cfg.StatePath names an existing state file, whose state it loads.
// It panics if Open fails, which it only does with StatePath set, when the
// state file exists but cannot be read or is corrupt; callers that set
// StatePath should use Open.
func New(cfg Config) *Cloud {
	c, err := Open(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// newCloud returns an empty cloud configured by cfg, ignoring StatePath.
func newCloud(cfg Config) *Cloud {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.AttachLimit <= 0 {
		cfg.AttachLimit = DefaultAttachLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Cloud{
		Faults:   faulty.New(faulty.Config{Seed: uint64(cfg.Seed), Now: cfg.Now, Name: "sim", HangMargin: cfg.HangMargin}),
		batch:    cfg.BatchSize,
		now:      cfg.Now,
		lenient:  cfg.Permissive,
		defLimit: cfg.AttachLimit,
		counters: newCounters(),
		nodes:    make(map[cloud.NodeName]*instance),
		insts:    make(map[cloud.InstanceID]*instance),
		vols:     make(map[cloud.VolumeID]*volume),
	}
	c.SetLatency(cfg.Latency)
	c.SetThrottle(cfg.ThrottleRate, cfg.ThrottleBurst)
	c.content = contentRoot(cfg.ContentDir)
	c.virtual = cfg.VirtualContent && c.content != ""
	return c
}

// AddInstance creates a running instance backing node, with the default
// attach limit, and returns its ID ("i-<node>-<counter>"). If an instance
// already backs node (running or not) it returns that one unchanged.
//
// With Config.StatePath set, an instance whose creation cannot be written
// is not created and AddInstance returns ""; use AddInstanceChecked to see
// the error.
func (c *Cloud) AddInstance(node cloud.NodeName) cloud.InstanceID {
	id, _ := c.AddInstanceChecked(node)
	return id
}

// AddInstanceChecked is AddInstance that reports the error of writing the
// state file (see Config.StatePath); it cannot fail without StatePath.
func (c *Cloud) AddInstanceChecked(node cloud.NodeName) (cloud.InstanceID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in, ok := c.nodes[node]; ok {
		return in.id, nil
	}
	id := c.newInstanceLocked(node)
	if err := c.commitLocked(); err != nil {
		return "", fmt.Errorf("sim: add instance for node %s: %w", node, err)
	}
	return id, nil
}

// AddInstances is AddInstanceChecked for many nodes with one durable
// commit: the IDs in the order of nodes. Nodes already backed keep their
// instance. If the commit fails nothing is added.
func (c *Cloud) AddInstances(nodes []cloud.NodeName) ([]cloud.InstanceID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]cloud.InstanceID, len(nodes))
	added := false
	for i, n := range nodes {
		if in, ok := c.nodes[n]; ok {
			ids[i] = in.id
			continue
		}
		ids[i], added = c.newInstanceLocked(n), true
	}
	if !added {
		return ids, nil
	}
	if err := c.commitLocked(); err != nil {
		return nil, fmt.Errorf("sim: add instances for %d nodes: %w", len(nodes), err)
	}
	return ids, nil
}

// CreateVolume creates a detached volume. It is idempotent: creating an
// existing volume again does nothing, and in particular keeps its original
// mode (a mode change is ignored, as a real cloud cannot change it either).
//
// With Config.ContentDir set it also creates the volume's content
// directory, unless id is not a valid name (names.ValidName): such a
// volume has no content. Errors creating the directory are dropped, and so
// are, with Config.StatePath set, errors writing the state file (the
// volume is then not created); use CreateVolumeChecked to see them.
func (c *Cloud) CreateVolume(id cloud.VolumeID, mode cloud.AccessMode) {
	if c.createVolume(id, mode) != nil {
		return
	}
	if c.content != "" && validVolume(id) == nil {
		_ = c.makeContent(id)
	}
}

func (c *Cloud) createVolume(id cloud.VolumeID, mode cloud.AccessMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.vols[id]; ok {
		return nil
	}
	c.vols[id] = &volume{id: id, mode: mode, attached: make(map[cloud.InstanceID]struct{})}
	c.touchVolLocked(id)
	if err := c.commitLocked(); err != nil {
		return fmt.Errorf("sim: create volume %s: %w", id, err)
	}
	return nil
}

// Terminate stops inst and removes every attachment it has, reporting each
// removal to observers with Reason "terminate" (these removals are not
// counted in DetachNew). The instance keeps its ID and still backs its node
// until Start. Terminating a stopped instance does nothing. It fails with
// cloud.ErrNotFound if inst is unknown, and with Config.StatePath set, when
// the change cannot be written (then nothing changed). It is not a provider
// call: it is not counted, throttled, delayed or subject to injected errors.
func (c *Cloud) Terminate(inst cloud.InstanceID) error {
	c.mu.Lock()
	in, ok := c.insts[inst]
	if !ok {
		c.mu.Unlock()
		return fmt.Errorf("sim: terminate %s: instance not found: %w", inst, cloud.ErrNotFound)
	}
	if !in.running {
		c.mu.Unlock()
		return nil
	}
	in.running = false
	c.touchInstLocked(inst)
	c.detachAllLocked(in, ReasonTerminate)
	return c.commitUnlock("terminate " + string(inst))
}

// Start makes a stopped instance run again, with the same ID and no
// volumes. Starting a running instance does nothing. It fails with
// cloud.ErrNotFound if inst is unknown, and with Config.StatePath set, when
// the change cannot be written (then nothing changed).
func (c *Cloud) Start(inst cloud.InstanceID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.insts[inst]
	if !ok {
		return fmt.Errorf("sim: start %s: instance not found: %w", inst, cloud.ErrNotFound)
	}
	if in.running {
		return nil
	}
	in.running = true
	c.touchInstLocked(inst)
	if err := c.commitLocked(); err != nil {
		return fmt.Errorf("sim: start %s: %w", inst, err)
	}
	return nil
}

// SetAttachLimit sets how many volumes inst may have attached. Lowering it
// below the current count detaches nothing; further attaches are refused.
// It fails with cloud.ErrNotFound if inst is unknown, and with
// Config.StatePath set, when the change cannot be written (then nothing
// changed).
func (c *Cloud) SetAttachLimit(inst cloud.InstanceID, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.insts[inst]
	if !ok {
		return fmt.Errorf("sim: set attach limit of %s: instance not found: %w", inst, cloud.ErrNotFound)
	}
	if in.limit == max(n, 0) {
		return nil
	}
	in.limit = max(n, 0)
	c.touchInstLocked(inst)
	if err := c.commitLocked(); err != nil {
		return fmt.Errorf("sim: set attach limit of %s: %w", inst, err)
	}
	return nil
}

// InstanceOf returns the instance backing node, running or not.
func (c *Cloud) InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool) {
	c.lockSettled()
	defer c.mu.Unlock()
	in, ok := c.nodes[node]
	if !ok {
		return "", false
	}
	return in.id, true
}

// Running reports whether inst exists and is running.
func (c *Cloud) Running(inst cloud.InstanceID) bool {
	c.lockSettled()
	defer c.mu.Unlock()
	in, ok := c.insts[inst]
	return ok && in.running
}

// Attachments returns a snapshot of the ground truth: every volume attached
// somewhere, mapped to its instances in sorted order. Detached volumes are
// absent.
func (c *Cloud) Attachments() map[cloud.VolumeID][]cloud.InstanceID {
	c.lockSettled()
	defer c.mu.Unlock()
	out := make(map[cloud.VolumeID][]cloud.InstanceID)
	for id, v := range c.vols {
		if len(v.attached) > 0 {
			out[id] = sortedKeys(v.attached)
		}
	}
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
