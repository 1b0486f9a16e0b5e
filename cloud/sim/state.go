package sim

// Durable state: with Config.StatePath set, the cloud's world (instances,
// volumes, attachments, the instance ID counter, the owner tag) and its
// counters are kept on disk in two files, so that a cloud embedded in a
// process that is killed comes back as it was, like a real cloud that
// outlives its clients:
//
//   - the snapshot, at StatePath: the whole state as one JSON document
//     (this file), written atomically (temporary file, fsync, rename, fsync
//     of the directory) and only now and then;
//   - the log, at StatePath + ".log": the changes made since that snapshot,
//     appended (statelog.go), several calls' changes sharing one write and
//     one fsync (commit.go).
//
// Snapshot and log carry a generation number: a log applies to the
// snapshot of its generation only. A log of another generation is left
// over from before a compaction (or the snapshot was put back by hand) and
// is ignored. Version 1 snapshots, written before the log existed, load as
// a snapshot of generation 0 with no log.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/tether/tether/cloud"
)

// stateVersion is the version of the snapshot format written: 2 adds the
// generation. Version 1 still loads (generation 0).
const stateVersion = 2

// stateFileMode is the mode of the snapshot and of the log.
const stateFileMode = 0o600

// state is the content of the snapshot.
type state struct {
	Version    int             `json:"version"`
	Generation uint64          `json:"generation,omitempty"` // of the log that follows it
	Seq        int             `json:"seq"`                  // last instance ID counter used
	Tag        string          `json:"tag,omitempty"`        // the owner's identity (SetTag)
	Instances  []stateInstance `json:"instances"`
	Volumes    []stateVolume   `json:"volumes"`
	Counters   stateCounters   `json:"counters"`
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

// snapshotLocked returns the state of c, sharing nothing with it.
func (c *Cloud) snapshotLocked() *state {
	st := &state{
		Version:   stateVersion,
		Seq:       c.seq,
		Tag:       c.tag,
		Instances: make([]stateInstance, 0, len(c.insts)),
		Volumes:   make([]stateVolume, 0, len(c.vols)),
		Counters:  c.stateCountersLocked(),
	}
	for _, id := range sortedKeys(c.insts) {
		st.Instances = append(st.Instances, stateInstanceOf(c.insts[id]))
	}
	for _, id := range sortedKeys(c.vols) {
		st.Volumes = append(st.Volumes, stateVolumeOf(c.vols[id]))
	}
	return st
}

// stateCountersLocked returns the counters of c, sharing nothing with it.
func (c *Cloud) stateCountersLocked() stateCounters {
	return stateCounters{
		Calls:     cloneCounts(c.counters.Calls),
		Errors:    cloneCounts(c.counters.Errors),
		Throttled: cloneCounts(c.counters.Throttled),
		AttachNew: c.counters.AttachNew,
		DetachNew: c.counters.DetachNew,
	}
}

// stateInstanceOf returns in as saved, sharing nothing with it.
func stateInstanceOf(in *instance) stateInstance {
	si := stateInstance{ID: in.id, Node: in.node, Running: in.running, AttachLimit: in.limit}
	if len(in.devices) > 0 {
		si.Devices = maps.Clone(in.devices)
	}
	return si
}

func stateVolumeOf(v *volume) stateVolume {
	return stateVolume{ID: v.id, Mode: stateMode(v.mode), Uncommitted: v.uncommitted}
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

// decodeState parses and validates a snapshot.
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
	if *head.Version != 1 && *head.Version != stateVersion {
		return nil, fmt.Errorf("unsupported version %d (this cloud reads versions 1 and %d)", *head.Version, stateVersion)
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
	if st.Version == 1 && st.Generation != 0 {
		return nil, errors.New("parse: a version 1 snapshot has no generation")
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
