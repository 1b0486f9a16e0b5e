package controller

import (
	"cmp"
	"slices"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
)

// What a volume actor rebuilds from: one volume's view of the store
// (ReadVolume, at every start), or every volume's at once (ReadVolumes,
// for the restore of Start; restore_handoff.go). Both go through
// volumeReads.snapshot, so they cannot disagree on what a snapshot is.

// VolumeSnapshot is what a volume actor rebuilds from: the store's view.
type VolumeSnapshot struct {
	// Restored lacks only the cloud's truth (Truth, AsOf).
	Restored volume.Restored
	// Candidates: the nodes to ask the cloud about (desired, listed, in
	// use, detaching, with an intent), sorted.
	Candidates []cloud.NodeName
	Deleted    bool   // the volume is not in the desired state
	Revision   uint64 // read first: newer changes carry a higher one
	ObjectUID  string // the desired volume's ("" when Deleted)
}

// ReadVolume reads a volume actor's rebuild snapshot from the store. The
// deterministic simulation rebuilds its volume cores with it too.
func ReadVolume(st store.Store, id cloud.VolumeID) (VolumeSnapshot, error) {
	got, err := readVolume(st, id)
	if err != nil {
		return emptySnapshot(), err
	}
	in := volumeReads{rev: got.Revision, spec: got.Spec, found: got.Found, desired: got.Desired, intents: got.Intents}
	for i := range got.Statuses {
		in.statuses = append(in.statuses, &got.Statuses[i])
	}
	return in.snapshot(id), nil
}

// readVolume reads what a volume actor rebuilds from: in one read where
// the store can (store.VolumeReader), else in five, Revision first.
func readVolume(st store.Store, id cloud.VolumeID) (store.VolumeRead, error) {
	if r, ok := st.(store.VolumeReader); ok {
		return r.ReadVolume(id)
	}
	var r store.VolumeRead
	var err error
	if r.Revision, err = st.Revision(); err != nil {
		return r, err
	}
	if r.Spec, r.Found, err = st.Volume(id); err != nil {
		return r, err
	}
	if r.Desired, err = st.DesiredNodes(id); err != nil {
		return r, err
	}
	if r.Statuses, err = st.StatusesWithVolume(id); err != nil {
		return r, err
	}
	r.Intents, err = st.Intents(id)
	return r, err
}

// ReadVolumes gives, for each of ids, what ReadVolume gives, from one read
// of each table instead of five reads per volume. A store.TableReader
// reads them as of one moment; any other store is read table by table,
// Revision first (the same rule as ReadVolume's: what is read after it is
// at least as new), its intents with one AllIntents if it has it
// (store.BulkIntents), else volume by volume.
func ReadVolumes(st store.Store, ids []cloud.VolumeID) (map[cloud.VolumeID]VolumeSnapshot, error) {
	t, err := readTables(st, ids)
	if err != nil {
		return nil, err
	}
	return snapshotsOf(t, ids), nil
}

// snapshotsOf is ReadVolumes on tables already read.
func snapshotsOf(t store.Tables, ids []cloud.VolumeID) map[cloud.VolumeID]VolumeSnapshot {
	specs := make(map[cloud.VolumeID]store.VolumeSpec, len(t.Volumes))
	for _, v := range t.Volumes {
		specs[v.ID] = v
	}
	desired := desiredByVolume(t.Workloads)
	statuses := statusesByVolume(t.Statuses)
	out := make(map[cloud.VolumeID]VolumeSnapshot, len(ids))
	for _, id := range ids {
		in := volumeReads{rev: t.Revision, statuses: statuses[id], intents: t.Intents[id]}
		in.spec, in.found = specs[id]
		if d := desired[id]; len(d) > 0 {
			in.desired = nodeNames(d) // none stays nil, as store.DesiredNodesOf gives it
		}
		out[id] = in.snapshot(id)
	}
	return out
}

func readTables(st store.Store, ids []cloud.VolumeID) (store.Tables, error) {
	if r, ok := st.(store.TableReader); ok {
		return r.ReadTables()
	}
	var t store.Tables
	var err error
	if t.Revision, err = st.Revision(); err != nil {
		return t, err
	}
	if t.Volumes, err = st.Volumes(); err != nil {
		return t, err
	}
	if t.Workloads, err = st.Workloads(); err != nil {
		return t, err
	}
	if t.Statuses, err = st.NodeStatuses(); err != nil {
		return t, err
	}
	if b, ok := st.(store.BulkIntents); ok {
		t.Intents, err = b.AllIntents()
		return t, err
	}
	t.Intents = make(map[cloud.VolumeID][]store.Intent, len(ids))
	for _, id := range ids {
		if t.Intents[id], err = st.Intents(id); err != nil {
			return t, err
		}
	}
	return t, nil
}

// statusesByVolume is store.StatusesWithVolume for every volume at once:
// the statuses listing each volume attached, in use or detaching, by node
// name. The lists point into sts.
func statusesByVolume(sts []nodestatus.Status) map[cloud.VolumeID][]*nodestatus.Status {
	slices.SortFunc(sts, func(a, b nodestatus.Status) int { return cmp.Compare(a.Name, b.Name) })
	out := map[cloud.VolumeID][]*nodestatus.Status{}
	for i := range sts {
		s := &sts[i]
		add := func(v cloud.VolumeID) {
			if l := out[v]; len(l) == 0 || l[len(l)-1] != s { // listed twice (attached and in use): once
				out[v] = append(l, s)
			}
		}
		for v := range s.VolumesAttached {
			add(v)
		}
		for v, ok := range s.VolumesInUse {
			if ok {
				add(v)
			}
		}
		for v, ok := range s.VolumesDetaching {
			if ok {
				add(v)
			}
		}
	}
	return out
}

// volumeReads is what the store holds about one volume.
type volumeReads struct {
	rev      uint64
	spec     store.VolumeSpec
	found    bool
	desired  []cloud.NodeName     // store.DesiredNodes
	statuses []*nodestatus.Status // store.StatusesWithVolume, by node name
	intents  []store.Intent       // store.Intents, by node
}

func emptySnapshot() VolumeSnapshot {
	return VolumeSnapshot{Restored: volume.Restored{Listed: map[cloud.NodeName]string{}, Nodes: map[cloud.NodeName]volume.NodeInfo{}}}
}

// snapshot builds id's snapshot; it only reads in.
func (in volumeReads) snapshot(id cloud.VolumeID) VolumeSnapshot {
	snap := emptySnapshot()
	snap.Revision, snap.Deleted, snap.ObjectUID = in.rev, !in.found, in.spec.ObjectUID
	r := &snap.Restored
	r.Mode, r.Desired = in.spec.Mode, in.desired
	cand := map[cloud.NodeName]bool{}
	for _, n := range r.Desired {
		cand[n] = true
	}
	for _, s := range in.statuses {
		if dev, ok := s.VolumesAttached[id]; ok {
			r.Listed[s.Name] = dev
			cand[s.Name] = true
		}
		if s.VolumesDetaching[id] {
			r.Detaching = append(r.Detaching, s.Name)
		}
		if s.VolumesInUse[id] || s.VolumesDetaching[id] {
			cand[s.Name] = true
		}
		if cand[s.Name] {
			i := s.Info(id)
			r.Nodes[s.Name] = volume.NodeInfo{InUse: i.InUse, Ready: i.Ready, NotReadySince: i.NotReadySince, OutOfService: i.OutOfService}
		}
	}
	for _, it := range in.intents {
		r.InFlight = append(r.InFlight, volume.InFlight{Node: it.Node, Deadline: it.Deadline})
		cand[it.Node] = true
	}
	snap.Candidates = sortedKeys(cand)
	return snap
}
