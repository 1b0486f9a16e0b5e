package sim

// Durable state: with Config.StatePath set, the cloud's world (instances,
// volumes, attachments, the instance ID counter) and its counters are kept
// in one JSON file, rewritten atomically after every change and before the
// call that made it returns, so that a cloud embedded in a process that is
// killed comes back as it was, like a real cloud that outlives its clients.
//
// The file is always a complete snapshot; a change is committed when the
// new snapshot has replaced the old one. Writes happen under Cloud.mu, so
// the file's successive contents follow the order of the changes. A write
// that fails reverts the change in memory (memory goes back to the last
// snapshot written) and drops the observer notifications it queued.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/cloud"
)

// stateVersion is the version of the state file format.
const stateVersion = 1

// stateFileMode is the mode of the state file.
const stateFileMode = 0o600

// state is the content of the state file.
type state struct {
	Version   int             `json:"version"`
	Seq       int             `json:"seq"`           // last instance ID counter used
	Tag       string          `json:"tag,omitempty"` // the owner's identity (SetTag)
	Instances []stateInstance `json:"instances"`
	Volumes   []stateVolume   `json:"volumes"`
	Counters  stateCounters   `json:"counters"`
}

type stateInstance struct {
	ID          cloud.InstanceID          `json:"id"`
	Node        cloud.NodeName            `json:"node"`
	Running     bool                      `json:"running"`
	AttachLimit int                       `json:"attach_limit"`
	Devices     map[cloud.VolumeID]string `json:"devices,omitempty"` // attached volume -> device path
}

type stateVolume struct {
	ID          cloud.VolumeID `json:"id"`
	Mode        stateMode      `json:"mode"`
	Uncommitted bool           `json:"uncommitted,omitempty"` // see CreateVolumeUncommitted
}

type stateCounters struct {
	Calls     map[Method]int `json:"calls,omitempty"`
	Errors    map[Method]int `json:"errors,omitempty"`
	Throttled map[Method]int `json:"throttled,omitempty"`
	AttachNew int            `json:"attach_new"`
	DetachNew int            `json:"detach_new"`
}

// stateMode is an access mode written as its name ("exclusive",
// "multi-node"; an unnamed mode as AccessMode.String writes it).
type stateMode cloud.AccessMode

func (m stateMode) MarshalText() ([]byte, error) {
	return []byte(cloud.AccessMode(m).String()), nil
}

func (m *stateMode) UnmarshalText(b []byte) error {
	s := string(b)
	for _, known := range []cloud.AccessMode{cloud.Exclusive, cloud.MultiNode} {
		if s == known.String() {
			*m = stateMode(known)
			return nil
		}
	}
	var n int
	if _, err := fmt.Sscanf(s, "AccessMode(%d)", &n); err != nil || cloud.AccessMode(n).String() != s {
		return fmt.Errorf("unknown access mode %q", s)
	}
	*m = stateMode(n)
	return nil
}

// store is the durable side of a Cloud with Config.StatePath; guarded by
// Cloud.mu.
type store struct {
	path  string // absolute
	saved []byte // the last state written (or loaded): what the file holds
	// write replaces the file at path with data (writeFileAtomic; tests
	// replace it). renamed reports whether the file was replaced, which
	// may be so even when err is not nil (the directory sync failed).
	write func(path string, data []byte) (renamed bool, err error)
}

// Open is New that loads the state of Config.StatePath, if set and the file
// exists; a missing file is an empty cloud, and nothing is written until the
// first change. It fails if the file exists but cannot be read, is not a
// state file of a supported version, or is inconsistent (an attachment to
// an unknown volume, two instances backing one node, ...). Without
// StatePath it never fails.
func Open(cfg Config) (*Cloud, error) {
	c := newCloud(cfg)
	if cfg.StatePath == "" {
		return c, nil
	}
	path, err := filepath.Abs(cfg.StatePath)
	if err != nil {
		return nil, fmt.Errorf("sim: state file %s: %w", cfg.StatePath, err)
	}
	s := &store{path: path, write: writeFileAtomic}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if s.saved, err = json.Marshal(c.snapshotLocked()); err != nil {
			return nil, fmt.Errorf("sim: state file %s: encode: %w", path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("sim: read state file: %w", err)
	default:
		st, err := decodeState(data)
		if err != nil {
			return nil, fmt.Errorf("sim: state file %s: %w", path, err)
		}
		c.applyWorldLocked(st)
		c.counters.Calls = nonNil(st.Counters.Calls)
		c.counters.Errors = nonNil(st.Counters.Errors)
		c.counters.Throttled = nonNil(st.Counters.Throttled)
		s.saved = data
	}
	c.state = s
	removeStaleTemps(path)
	return c, nil
}

// commitLocked makes the changes made since mark (the length of the
// observer queue before them) durable, then tells the synchronous
// observers about them (committedLocked). Without StatePath nothing is
// written.
// If the state cannot be written it reverts the instances, volumes,
// attachments, instance ID counter, AttachNew and DetachNew to the last
// state written, drops the changes queued since mark (observers only see
// written changes) and returns an error naming the file that wraps the
// cause and cloud.ErrRetryable. Calls, Errors and Throttled are not
// reverted: they count calls, the failing one included, and the next
// successful write saves them.
func (c *Cloud) commitLocked(mark int) error {
	s := c.state
	if s == nil {
		c.committedLocked(mark)
		return nil
	}
	data, err := json.Marshal(c.snapshotLocked())
	if err == nil {
		var renamed bool
		if renamed, err = s.write(s.path, data); err == nil {
			s.saved = data
			c.committedLocked(mark)
			return nil
		}
		if renamed {
			// The new state may be in the file already: put the last
			// one back (best effort), so that the file matches memory.
			_, _ = s.write(s.path, s.saved)
		}
	}
	st, derr := decodeState(s.saved)
	if derr != nil {
		panic(fmt.Sprintf("sim: state written to %s does not load: %v", s.path, derr))
	}
	c.applyWorldLocked(st)
	clear(c.obs.queue[mark:])
	c.obs.queue = c.obs.queue[:mark]
	return fmt.Errorf("state not saved to %s: %w: %w", s.path, err, cloud.ErrRetryable)
}

// snapshotLocked returns the state of c, sharing nothing with it.
func (c *Cloud) snapshotLocked() *state {
	st := &state{
		Version:   stateVersion,
		Seq:       c.seq,
		Tag:       c.tag,
		Instances: make([]stateInstance, 0, len(c.insts)),
		Volumes:   make([]stateVolume, 0, len(c.vols)),
		Counters: stateCounters{
			Calls:     cloneCounts(c.counters.Calls),
			Errors:    cloneCounts(c.counters.Errors),
			Throttled: cloneCounts(c.counters.Throttled),
			AttachNew: c.counters.AttachNew,
			DetachNew: c.counters.DetachNew,
		},
	}
	for _, id := range sortedKeys(c.insts) {
		in := c.insts[id]
		si := stateInstance{ID: in.id, Node: in.node, Running: in.running, AttachLimit: in.limit}
		if len(in.devices) > 0 {
			si.Devices = maps.Clone(in.devices)
		}
		st.Instances = append(st.Instances, si)
	}
	for _, id := range sortedKeys(c.vols) {
		st.Volumes = append(st.Volumes, stateVolume{ID: id, Mode: stateMode(c.vols[id].mode), Uncommitted: c.vols[id].uncommitted})
	}
	return st
}

// applyWorldLocked replaces the world of c (instances, volumes,
// attachments, instance ID counter, AttachNew, DetachNew) with that of a
// validated st.
func (c *Cloud) applyWorldLocked(st *state) {
	c.seq, c.tag = st.Seq, st.Tag
	c.nodes = make(map[cloud.NodeName]*instance, len(st.Instances))
	c.insts = make(map[cloud.InstanceID]*instance, len(st.Instances))
	c.vols = make(map[cloud.VolumeID]*volume, len(st.Volumes))
	for _, sv := range st.Volumes {
		c.vols[sv.ID] = &volume{id: sv.ID, mode: cloud.AccessMode(sv.Mode), uncommitted: sv.Uncommitted, attached: make(map[cloud.InstanceID]struct{})}
	}
	for _, si := range st.Instances {
		in := &instance{id: si.ID, node: si.Node, running: si.Running, limit: si.AttachLimit,
			devices: make(map[cloud.VolumeID]string, len(si.Devices))}
		for vol, dev := range si.Devices {
			in.devices[vol] = dev
			c.vols[vol].attached[in.id] = struct{}{}
		}
		c.nodes[in.node] = in
		c.insts[in.id] = in
	}
	c.counters.AttachNew = st.Counters.AttachNew
	c.counters.DetachNew = st.Counters.DetachNew
}

// decodeState parses and validates a state file.
func decodeState(data []byte) (*state, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a state file: %w", err)
	}
	if head.Version == nil {
		return nil, errors.New("not a state file: no version")
	}
	if *head.Version != stateVersion {
		return nil, fmt.Errorf("unsupported version %d (this cloud reads version %d)", *head.Version, stateVersion)
	}
	var st state
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("parse: data after the state")
	}
	if err := st.validate(); err != nil {
		return nil, fmt.Errorf("inconsistent state: %w", err)
	}
	return &st, nil
}

// validate checks what the cloud relies on: unique IDs, one instance per
// node, attachments to known volumes at distinct device paths, only on
// running instances, exclusive volumes attached at most once.
func (st *state) validate() error {
	if st.Seq < len(st.Instances) {
		return fmt.Errorf("instance counter %d below the %d instances", st.Seq, len(st.Instances))
	}
	vols := make(map[cloud.VolumeID]*stateVolume, len(st.Volumes))
	for i := range st.Volumes {
		sv := &st.Volumes[i]
		if _, dup := vols[sv.ID]; dup {
			return fmt.Errorf("volume %q listed twice", sv.ID)
		}
		vols[sv.ID] = sv
	}
	ids := make(map[cloud.InstanceID]bool, len(st.Instances))
	nodes := make(map[cloud.NodeName]cloud.InstanceID, len(st.Instances))
	holder := make(map[cloud.VolumeID]cloud.InstanceID)
	for _, si := range st.Instances {
		switch {
		case si.ID == "":
			return fmt.Errorf("instance of node %q has no ID", si.Node)
		case ids[si.ID]:
			return fmt.Errorf("instance %s listed twice", si.ID)
		case si.AttachLimit < 0:
			return fmt.Errorf("instance %s: negative attach limit %d", si.ID, si.AttachLimit)
		case !si.Running && len(si.Devices) > 0:
			return fmt.Errorf("instance %s: stopped with %d volumes attached", si.ID, len(si.Devices))
		}
		if other, dup := nodes[si.Node]; dup {
			return fmt.Errorf("node %q backed by both %s and %s", si.Node, other, si.ID)
		}
		ids[si.ID], nodes[si.Node] = true, si.ID
		devs := make(map[string]cloud.VolumeID, len(si.Devices))
		for _, vol := range sortedKeys(si.Devices) {
			dev := si.Devices[vol]
			sv, ok := vols[vol]
			switch {
			case !ok:
				return fmt.Errorf("instance %s: attached volume %q not found", si.ID, vol)
			case dev == "":
				return fmt.Errorf("instance %s: volume %q attached without a device path", si.ID, vol)
			}
			if other, dup := devs[dev]; dup {
				return fmt.Errorf("instance %s: volumes %q and %q both at %s", si.ID, other, vol, dev)
			}
			devs[dev] = vol
			if other, dup := holder[vol]; dup && cloud.AccessMode(sv.Mode) == cloud.Exclusive {
				return fmt.Errorf("exclusive volume %q attached to both %s and %s", vol, other, si.ID)
			}
			holder[vol] = si.ID
		}
	}
	return nil
}

// writeFileAtomic replaces path with a file holding data, mode 0600: it
// writes a temporary file in the same directory, syncs it, renames it over
// path and syncs the directory. renamed reports whether the rename
// happened (then path holds data, durably unless err is not nil).
func writeFileAtomic(path string, data []byte) (renamed bool, err error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return false, err
	}
	tmp := f.Name()
	err = f.Chmod(stateFileMode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return true, err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return true, nil
}

// tempPrefix is the name prefix of the temporary files of the state file
// named base.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// removeStaleTemps removes (best effort) the temporary files a process
// killed while writing the state file at path left behind.
func removeStaleTemps(path string) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix(base)) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// cloneCounts copies m; nil if empty, as the file's omitted maps load.
func cloneCounts(m map[Method]int) map[Method]int {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func nonNil(m map[Method]int) map[Method]int {
	if m == nil {
		return make(map[Method]int)
	}
	return m
}
