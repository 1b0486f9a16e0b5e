package chaos

import (
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// recordingStore notes every change of a node's VolumesInUse and
// VolumesAttached in the volumes' histories.
type recordingStore struct {
	store.Store
	c *Checker
}

func (s recordingStore) PutNodeStatus(st nodestatus.Status) error {
	old, _, _ := s.Store.NodeStatus(st.Name)
	err := s.Store.PutNodeStatus(st)
	if err != nil {
		return err
	}
	for v := range union(old.VolumesInUse, st.VolumesInUse) {
		if old.VolumesInUse[v] != st.VolumesInUse[v] {
			s.c.Note(v, "status %s in-use=%v", st.Name, st.VolumesInUse[v])
		}
	}
	for v := range union(old.VolumesAttached, st.VolumesAttached) {
		_, was := old.VolumesAttached[v]
		_, is := st.VolumesAttached[v]
		if was != is {
			s.c.Note(v, "status %s attached=%v", st.Name, is)
		}
	}
	return nil
}

func union[T any](a, b map[cloud.VolumeID]T) map[cloud.VolumeID]bool {
	out := map[cloud.VolumeID]bool{}
	for v := range a {
		out[v] = true
	}
	for v := range b {
		out[v] = true
	}
	return out
}
