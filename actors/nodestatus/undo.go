package nodestatus

import "github.com/tether/tether/cloud"

// change is one entry of cur's maps as it was before a change made since
// the last persisted status. Undone newest first, the changes give the
// persisted maps back (PersistFailed). There are none at rest, and a
// burst holds one per entry it changes, where a copy of the persisted
// status held every entry, for good.
type change struct {
	vol   cloud.VolumeID
	dev   string // its value, in VolumesAttached
	field field
	had   bool // the entry was there
	flag  bool // its value, in VolumesInUse or VolumesDetaching
}

// field names one of Status's maps.
type field uint8

const (
	fieldAttached field = iota
	fieldInUse
	fieldDetaching
)

// flags returns the map of a boolean field.
func (n *Node) flags(f field) map[cloud.VolumeID]bool {
	if f == fieldInUse {
		return n.cur.VolumesInUse
	}
	return n.cur.VolumesDetaching
}

// attach lists v in VolumesAttached with device dev.
func (n *Node) attach(v cloud.VolumeID, dev string) {
	old, had := n.cur.VolumesAttached[v]
	if had && old == dev {
		return
	}
	n.undo = append(n.undo, change{vol: v, dev: old, field: fieldAttached, had: had})
	n.cur.VolumesAttached[v] = dev
}

// unattach removes v from VolumesAttached.
func (n *Node) unattach(v cloud.VolumeID) {
	old, had := n.cur.VolumesAttached[v]
	if !had {
		return
	}
	n.undo = append(n.undo, change{vol: v, dev: old, field: fieldAttached, had: true})
	delete(n.cur.VolumesAttached, v)
}

// mark sets v in a boolean field (on), or removes it.
func (n *Node) mark(f field, v cloud.VolumeID, on bool) {
	m := n.flags(f)
	old, had := m[v]
	if on == had && (!on || old) {
		return
	}
	n.undo = append(n.undo, change{vol: v, field: f, had: had, flag: old})
	if on {
		m[v] = true
	} else {
		delete(m, v)
	}
}

// markSaved records cur as the persisted status.
func (n *Node) markSaved() {
	n.saved = n.cur
	n.saved.VolumesAttached, n.saved.VolumesInUse, n.saved.VolumesDetaching = nil, nil, nil
	n.undo = nil
}

// restoreSaved makes cur the persisted status again.
func (n *Node) restoreSaved() {
	for i := len(n.undo) - 1; i >= 0; i-- {
		c := n.undo[i]
		switch {
		case c.field == fieldAttached && c.had:
			n.cur.VolumesAttached[c.vol] = c.dev
		case c.field == fieldAttached:
			delete(n.cur.VolumesAttached, c.vol)
		case c.had:
			n.flags(c.field)[c.vol] = c.flag
		default:
			delete(n.flags(c.field), c.vol)
		}
	}
	st := n.saved
	st.VolumesAttached, st.VolumesInUse, st.VolumesDetaching = n.cur.VolumesAttached, n.cur.VolumesInUse, n.cur.VolumesDetaching
	n.cur = st
	n.undo = nil
}
