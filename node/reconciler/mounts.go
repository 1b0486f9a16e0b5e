package reconciler

import (
	"slices"
	"strings"
)

// mounts is what is mounted on the node, by volume: one map entry per
// volume holds its stage and one publish, and the volume's other
// publishes (a volume shared by workloads) wait in more. A map of stages
// and one of publishes kept ~115 bytes per volume at rest (ten a node);
// this keeps ~75, and finds a volume's publishes without a scan of all.
type mounts struct {
	byVol map[VolumeID]volMounts
	more  map[PubKey]MountState // nil while empty
}

// volMounts is one volume's entry: a zero state is no mount.
type volMounts struct {
	stage, pub uint8  // MountStates
	uid        string // of pub
}

func newMounts() mounts { return mounts{byVol: map[VolumeID]volMounts{}} }

// stage is the state of v's stage (0: none).
func (m *mounts) stage(v VolumeID) MountState { return MountState(m.byVol[v].stage) }

func (m *mounts) setStage(v VolumeID, s MountState) {
	e := m.byVol[v]
	e.stage = uint8(s)
	m.byVol[v] = e
}

func (m *mounts) deleteStage(v VolumeID) {
	if e, ok := m.byVol[v]; ok {
		e.stage = 0
		m.put(v, e)
	}
}

// pub is the state of publish k (0: none).
func (m *mounts) pub(k PubKey) MountState {
	if e := m.byVol[k.Volume]; e.pub != 0 && e.uid == k.UID {
		return MountState(e.pub)
	}
	return m.more[k]
}

func (m *mounts) setPub(k PubKey, s MountState) {
	e := m.byVol[k.Volume]
	if e.pub != 0 && e.uid == k.UID {
		e.pub = uint8(s)
		m.byVol[k.Volume] = e
		return
	}
	if _, ok := m.more[k]; ok || e.pub != 0 {
		m.more = with(m.more, k, s)
		return
	}
	e.pub, e.uid = uint8(s), k.UID
	m.byVol[k.Volume] = e
}

func (m *mounts) deletePub(k PubKey) {
	if e, ok := m.byVol[k.Volume]; ok && e.pub != 0 && e.uid == k.UID {
		e.pub, e.uid = 0, ""
		m.put(k.Volume, e)
		return
	}
	m.more = without(m.more, k)
}

// put stores e, or drops v's entry if nothing is left in it.
func (m *mounts) put(v VolumeID, e volMounts) {
	if e.stage == 0 && e.pub == 0 {
		delete(m.byVol, v)
		return
	}
	m.byVol[v] = e
}

// appendVols appends to buf the volume of every mount, once per mount:
// all's volumes, with no function value to call (the step's inUse runs it
// at every step).
func (m *mounts) appendVols(buf []VolumeID) []VolumeID {
	for v, e := range m.byVol {
		if e.stage != 0 || e.pub != 0 {
			buf = append(buf, v)
		}
	}
	for k := range m.more {
		buf = append(buf, k.Volume)
	}
	return buf
}

// pubsOf lists the publishes of v, by UID.
func (m *mounts) pubsOf(v VolumeID) []PubKey {
	var out []PubKey
	if e := m.byVol[v]; e.pub != 0 {
		out = append(out, PubKey{e.uid, v})
	}
	for k := range m.more {
		if k.Volume == v {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(x, y PubKey) int { return strings.Compare(x.UID, y.UID) })
	return out
}

// all calls f for every stage (UID "") and publish, in no order.
func (m *mounts) all(f func(v VolumeID, uid string, s MountState)) {
	for v, e := range m.byVol {
		if e.stage != 0 {
			f(v, "", MountState(e.stage))
		}
		if e.pub != 0 {
			f(v, e.uid, MountState(e.pub))
		}
	}
	for k, s := range m.more {
		f(k.Volume, k.UID, s)
	}
}
