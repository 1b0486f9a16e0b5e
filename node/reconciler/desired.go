package reconciler

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The desired state is kept in three slices, not in maps: a map per
// workload, then a map of maps by volume, cost ~430 bytes of heap per
// volume at rest; these keep ~85 (one workload per volume).

// desiredWorkload is a workload of the desired state (Agent.desired, by
// UID).
type desiredWorkload struct {
	uid      string
	lo, hi   int32 // its uses: Agent.uses[lo:hi], by volume, each volume once
	since    time.Time
	timedOut bool
}

// use is one volume of a desired workload (Agent.uses).
type use struct {
	vol VolumeID
	ro  bool
	w   int32 // the workload: its index in Agent.desired
}

func (a *Agent) onDesired(now time.Time, e DesiredChanged) {
	if e.Revision < a.desiredRev {
		return // an older snapshot, overtaken
	}
	a.desiredRev = e.Revision
	a.desiredKnown = true
	// The last workload of a UID named twice wins; a workload already
	// desired keeps when it arrived and whether it timed out.
	order := make([]int, len(e.Workloads))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(e.Workloads[i].UID, e.Workloads[j].UID) })
	last := order[:0]
	uses := 0
	for k, i := range order {
		if k+1 < len(order) && e.Workloads[order[k+1]].UID == e.Workloads[i].UID {
			continue
		}
		last = append(last, i)
		uses += len(e.Workloads[i].Volumes)
	}
	next := make([]desiredWorkload, 0, len(last))
	all := make([]use, 0, uses)
	for _, i := range last {
		w := e.Workloads[i]
		d := desiredWorkload{uid: w.UID, since: now}
		if old := a.desiredOf(w.UID); old != nil {
			d.since, d.timedOut = old.since, old.timedOut
		}
		d.lo = int32(len(all))
		all = appendUses(all, w.Volumes, int32(len(next)))
		d.hi = int32(len(all))
		next = append(next, d)
	}
	a.desired, a.uses, a.wanted = next, all, nil
}

// desiredOf is the desired workload uid, or nil.
func (a *Agent) desiredOf(uid string) *desiredWorkload {
	i, ok := slices.BinarySearchFunc(a.desired, uid, func(d desiredWorkload, uid string) int { return strings.Compare(d.uid, uid) })
	if !ok {
		return nil
	}
	return &a.desired[i]
}

// appendUses appends the uses of workload w (in) to dst, sorted by volume,
// each volume once: the last use of a volume named twice says whether it
// is read-only.
func appendUses(dst []use, in []Use, w int32) []use {
	lo := len(dst)
	for _, u := range in {
		if i := slices.IndexFunc(dst[lo:], func(o use) bool { return o.vol == u.Volume }); i >= 0 {
			dst[lo+i].ro = u.ReadOnly
			continue
		}
		dst = append(dst, use{vol: u.Volume, ro: u.ReadOnly, w: w})
	}
	slices.SortFunc(dst[lo:], func(a, b use) int { return strings.Compare(string(a.vol), string(b.vol)) })
	return dst
}

// wantedBy indexes the wanted volumes: it lists the uses (their indexes
// in a.uses) by volume, then by workload UID. It is kept until the desired
// state changes (it was built again on every step: a fifth of a fleet
// start's garbage); callers only read it.
func (a *Agent) wantedBy() []int32 {
	if a.wanted != nil {
		return a.wanted
	}
	out := make([]int32, len(a.uses))
	for i := range out {
		out[i] = int32(i)
	}
	slices.SortFunc(out, func(x, y int32) int {
		if c := strings.Compare(string(a.uses[x].vol), string(a.uses[y].vol)); c != 0 {
			return c
		}
		return cmp.Compare(x, y) // a.uses follows a.desired, by UID
	})
	a.wanted = out
	return out
}

// usersOf is the part of wanted (wantedBy's) about volume v: its uses by
// the workloads that want it, by UID.
func (a *Agent) usersOf(wanted []int32, v VolumeID) []int32 {
	lo, _ := slices.BinarySearchFunc(wanted, v, func(i int32, v VolumeID) int { return strings.Compare(string(a.uses[i].vol), string(v)) })
	hi := lo
	for hi < len(wanted) && a.uses[wanted[hi]].vol == v {
		hi++
	}
	return wanted[lo:hi]
}

// wants: workload uid is among users (a usersOf answer).
func (a *Agent) wants(users []int32, uid string) bool {
	_, ok := slices.BinarySearchFunc(users, uid, func(i int32, uid string) int { return strings.Compare(a.desired[a.uses[i].w].uid, uid) })
	return ok
}
