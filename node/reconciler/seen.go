package reconciler

import (
	"slices"
	"strings"
)

// seenVol is what the controller's latest node status says of one volume.
type seenVol struct {
	vol      VolumeID
	device   string // when attached
	attached bool   // listed in VolumesAttached
	inUse    bool   // listed in VolumesInUse (as true)
}

// seen is the latest node status, by volume: one slice, not the status's
// two maps (cloned, they kept ~110 bytes per volume at rest; this keeps
// 40).
type seen []seenVol

// of is what the status says of volume v (zero if nothing).
func (s seen) of(v VolumeID) seenVol {
	if i, ok := slices.BinarySearchFunc(s, v, func(x seenVol, v VolumeID) int { return strings.Compare(string(x.vol), string(v)) }); ok {
		return s[i]
	}
	return seenVol{}
}

// same: s says what e does.
func (s seen) same(e StatusChanged) bool {
	attached, inUse := 0, 0
	for _, x := range s {
		if x.attached {
			attached++
			if d, ok := e.Attached[x.vol]; !ok || d != x.device {
				return false
			}
		}
		if x.inUse {
			inUse++
			if !e.InUse[x.vol] {
				return false
			}
		}
	}
	if attached != len(e.Attached) {
		return false
	}
	for _, u := range e.InUse {
		if u {
			inUse--
		}
	}
	return inUse == 0
}

// seenFrom builds the seen of status e.
func seenFrom(e StatusChanged) seen {
	n := len(e.Attached)
	for v, u := range e.InUse {
		if _, ok := e.Attached[v]; u && !ok {
			n++
		}
	}
	out := make(seen, 0, n)
	for v, d := range e.Attached {
		out = append(out, seenVol{vol: v, device: d, attached: true, inUse: e.InUse[v]})
	}
	for v, u := range e.InUse {
		if _, ok := e.Attached[v]; u && !ok {
			out = append(out, seenVol{vol: v, inUse: true})
		}
	}
	slices.SortFunc(out, func(x, y seenVol) int { return strings.Compare(string(x.vol), string(y.vol)) })
	return out
}
