package bench

import (
	"fmt"
	"hash/maphash"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/mount"
)

// truth is the ground truth the phases wait for, kept up to date from
// the sources themselves: the sim cloud's change feed (every attachment
// made or removed, as the cloud records it) and every mount call that
// succeeded on a node (publish and unpublish, as the mounter did them).
// Neither is tether's report of its own work.
//
// It lives in the process whose heap the bench measures per volume, so a
// volume costs it little (about 80 bytes, where maps of slices per volume
// cost 380, its mount's path included): node names are numbered, a
// volume's state is an entry of a slice holding its first attachment and
// its first mount inline (a volume at rest has one of each), the rare
// others spill into maps, and a mount's target path is kept as a hash.
// What describe reads (want, attached, published) is kept for the volumes
// that differ from what is wanted only.
type truth struct {
	mu sync.Mutex
	// ids numbers the volumes known: vols[ids[v]] is v's state; free
	// lists the numbers of volumes forgotten (wanted nowhere, attached and
	// mounted nowhere), for new ones.
	ids  map[cloud.VolumeID]int32
	vols []volState
	free []int32
	// nodes[id] is the node numbered id (from 1: 0 is none).
	nodes   []cloud.NodeName
	nodeIDs map[cloud.NodeName]nodeID
	// attMore and pubMore hold a volume's attachments and mounts past its
	// first (two at once is what twice looks for).
	attMore spill[nodeID]
	pubMore spill[target]
	seed    maphash.Seed
	// bad = the volumes whose truth differs from what is wanted, kept up
	// to date on every change so that a phase's wait costs nothing. For
	// them only: want[v], the node v should be attached and mounted on
	// (and nowhere else); attached[v], the nodes whose instance has v
	// attached; published[v], the node of each target showing v. Each is
	// nil once empty, so that none keeps the size it had.
	bad       map[cloud.VolumeID]bool
	want      map[cloud.VolumeID]cloud.NodeName
	attached  map[cloud.VolumeID][]cloud.NodeName
	published map[cloud.VolumeID][]cloud.NodeName
	// changes counts attach and detach changes and mount calls, to tell a
	// phase that changed nothing (restart) from one that did.
	attaches, detaches, publishes, unpublishes atomic.Int64
}

// nodeID numbers a node name in truth.nodes; 0 is none.
type nodeID uint32

// volState is one volume's truth: the node it is wanted on, its first
// attachment and its first mount (0: none; the others are in the spills).
type volState struct {
	want, att nodeID
	pub       target
}

// target is a mount: its node, and its path's hash (64 bits: two
// targets of one volume on one node that collide are as likely as
// 2^-64).
type target struct {
	path uint64
	node nodeID
}

func newTruth() *truth {
	return &truth{ids: map[cloud.VolumeID]int32{}, nodes: []cloud.NodeName{""}, nodeIDs: map[cloud.NodeName]nodeID{}, seed: maphash.MakeSeed()}
}

// nodesOf lists the distinct nodes of ns.
func nodesOf(ns []cloud.NodeName) []cloud.NodeName {
	var out []cloud.NodeName
	for _, n := range ns {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// volume returns v's number, numbering it if it is new.
func (t *truth) volume(v cloud.VolumeID) int32 {
	if i, ok := t.ids[v]; ok {
		return i
	}
	var i int32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = int32(len(t.vols))
		t.vols = append(t.vols, volState{})
	}
	t.ids[cloud.VolumeID(strings.Clone(string(v)))] = i // not a caller's larger string (a path)
	return i
}

// node returns n's number, numbering it if it is new.
func (t *truth) node(n cloud.NodeName) nodeID {
	if id, ok := t.nodeIDs[n]; ok {
		return id
	}
	id := nodeID(len(t.nodes))
	n = cloud.NodeName(strings.Clone(string(n)))
	t.nodes, t.nodeIDs[n] = append(t.nodes, n), id
	return id
}

// checkLocked recomputes whether v (numbered i) is as wanted, and
// forgets it if nothing is wanted or left of it.
func (t *truth) checkLocked(v cloud.VolumeID, i int32) {
	s := t.vols[i]
	ok := s.att == 0 && s.pub.node == 0
	if s.want != 0 {
		ok = s.att == s.want && len(t.attMore[i]) == 0 && s.pub.node == s.want &&
			!slices.ContainsFunc(t.pubMore[i], func(x target) bool { return x.node != s.want })
	}
	if !ok {
		att := t.names(all(s.att, t.attMore, i))
		var pubs []cloud.NodeName
		for _, x := range all(s.pub, t.pubMore, i) {
			pubs = append(pubs, t.nodes[x.node])
		}
		t.bad = put(t.bad, v, true, true)
		t.want = put(t.want, v, t.nodes[s.want], s.want != 0)
		t.attached = put(t.attached, v, att, len(att) > 0)
		t.published = put(t.published, v, pubs, len(pubs) > 0)
		return
	}
	t.bad, t.want, t.attached, t.published = drop(t.bad, v), drop(t.want, v), drop(t.attached, v), drop(t.published, v)
	if s == (volState{}) {
		delete(t.ids, v)
		t.free = append(t.free, i)
	}
}

func (t *truth) names(ids []nodeID) []cloud.NodeName {
	var out []cloud.NodeName
	for _, id := range ids {
		out = append(out, t.nodes[id])
	}
	return out
}

// setWant makes v wanted on n ("": nowhere).
func (t *truth) setWant(v cloud.VolumeID, n cloud.NodeName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.volume(v)
	t.vols[i].want = 0
	if n != "" {
		t.vols[i].want = t.node(n)
	}
	t.checkLocked(v, i)
}

// observe follows one cloud's attachment changes.
func (t *truth) observe(c sim.Change) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.volume(c.Volume)
	if c.Attached {
		t.attaches.Add(1)
		add(&t.vols[i].att, &t.attMore, i, t.node(c.Node))
	} else {
		t.detaches.Add(1)
		remove(&t.vols[i].att, &t.attMore, i, t.node(c.Node))
	}
	t.checkLocked(c.Volume, i)
}

// load replaces the attachments with a snapshot (at start: the cloud's
// state file may hold attachments already).
func (t *truth) load(att map[cloud.VolumeID][]cloud.NodeName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.vols {
		t.vols[i].att = 0
	}
	t.attMore = nil
	for v, nodes := range att {
		i := t.volume(v)
		for _, n := range nodes {
			add(&t.vols[i].att, &t.attMore, i, t.node(n))
		}
	}
	for v, i := range t.ids {
		t.checkLocked(v, i)
	}
}

func (t *truth) publish(n cloud.NodeName, path string) {
	vol := cloud.VolumeID(filepath.Base(path)) // .../volumes/<plugin>/<volume>
	t.mu.Lock()
	defer t.mu.Unlock()
	t.publishes.Add(1)
	i := t.volume(vol)
	add(&t.vols[i].pub, &t.pubMore, i, target{node: t.node(n), path: maphash.String(t.seed, path)})
	t.checkLocked(vol, i)
}

func (t *truth) unpublish(n cloud.NodeName, path string) {
	vol := cloud.VolumeID(filepath.Base(path))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unpublishes.Add(1)
	i := t.volume(vol)
	remove(&t.vols[i].pub, &t.pubMore, i, target{node: t.node(n), path: maphash.String(t.seed, path)})
	t.checkLocked(vol, i)
}

// matches reports whether every volume is attached exactly on the node
// want names and published there (and nowhere else), and nothing else is
// attached or published; if not, one volume that differs.
func (t *truth) matches() (bool, cloud.VolumeID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for v := range t.bad {
		return false, v
	}
	return true, ""
}

// left says how many volumes differ from what is wanted, and how the
// first one does ("" when none does).
func (t *truth) left() string {
	ok, v := t.matches()
	if ok {
		return ""
	}
	t.mu.Lock()
	n := len(t.bad)
	t.mu.Unlock()
	return fmt.Sprintf("%d volumes not attached and mounted exactly where wanted; volume %q: %s", n, v, t.describe(v))
}

// describe says where v is wanted, attached and mounted (v differing
// from what is wanted: the others' are not kept).
func (t *truth) describe(v cloud.VolumeID) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("wanted on %q, attached on %v, mounted on %v", t.want[v], t.attached[v], nodesOf(t.published[v]))
}

// attachmentsMatch reports whether the cloud's side is as wanted: every
// volume attached on the node want names only (mounts aside).
func (t *truth) attachmentsMatch() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for v := range t.bad {
		att, want := t.attached[v], t.want[v]
		if len(att) > 1 || (len(att) == 1) != (want != "") || (len(att) == 1 && att[0] != want) {
			return false
		}
	}
	return true
}

// twice lists the volumes attached to, or published on, more than one
// node (every volume of the bench is exclusive).
func (t *truth) twice() []cloud.VolumeID {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.attMore) == 0 && len(t.pubMore) == 0 {
		return nil // no volume has a second attachment or mount
	}
	var out []cloud.VolumeID
	for v, i := range t.ids {
		first := t.vols[i].pub.node
		if len(t.attMore[i]) > 0 || slices.ContainsFunc(t.pubMore[i], func(x target) bool { return x.node != first }) {
			out = append(out, v)
		}
	}
	return out
}

// spill holds, by volume number, the elements of a small set past its
// first, which the volume's state holds inline (the zero value: none).
type spill[T comparable] map[int32][]T

// add adds x to the set of volume i: first, then its spill.
func add[T comparable](first *T, more *spill[T], i int32, x T) {
	var none T
	switch {
	case *first == x || slices.Contains((*more)[i], x):
	case *first == none:
		*first = x
	default:
		if *more == nil {
			*more = spill[T]{}
		}
		(*more)[i] = append((*more)[i], x)
	}
}

// remove removes x from the set of volume i; the spill's first moves
// inline if x was.
func remove[T comparable](first *T, more *spill[T], i int32, x T) {
	var none T
	rest := (*more)[i]
	switch {
	case *first == x && len(rest) == 0:
		*first = none
		return
	case *first == x:
		*first = rest[0]
		rest = slices.Delete(rest, 0, 1)
	default:
		rest = slices.DeleteFunc(rest, func(y T) bool { return y == x })
	}
	if len(rest) > 0 {
		(*more)[i] = rest
		return
	}
	if delete(*more, i); len(*more) == 0 {
		*more = nil
	}
}

// all lists the set of volume i.
func all[T comparable](first T, more spill[T], i int32) []T {
	var none T
	if first == none {
		return nil
	}
	return append([]T{first}, more[i]...)
}

// put sets m[k] = x if keep, making m if needed; else it drops k.
func put[K comparable, V any](m map[K]V, k K, x V, keep bool) map[K]V {
	if !keep {
		return drop(m, k)
	}
	if m == nil {
		m = map[K]V{}
	}
	m[k] = x
	return m
}

// drop deletes m[k], returning nil for a map left empty.
func drop[K comparable, V any](m map[K]V, k K) map[K]V {
	if delete(m, k); len(m) == 0 {
		return nil
	}
	return m
}

// tracked is a node's mounter reporting its successful publishes and
// unpublishes to truth.
type tracked struct {
	mount.Mounter
	node   cloud.NodeName
	truth  *truth
	mounts *atomic.Int64 // stages and publishes asked for
}

func (m tracked) Stage(source, target string) error {
	m.mounts.Add(1)
	return m.Mounter.Stage(source, target)
}

func (m tracked) Publish(staged, target string, readOnly bool) error {
	m.mounts.Add(1)
	err := m.Mounter.Publish(staged, target, readOnly)
	if err == nil {
		m.truth.publish(m.node, target)
	}
	return err
}

func (m tracked) Unpublish(target string) error {
	err := m.Mounter.Unpublish(target)
	if err == nil {
		m.truth.unpublish(m.node, target)
	}
	return err
}

// Unwrap returns the tracked mounter (mount.Unwrapper): Scan reads a
// memory table through it.
func (m tracked) Unwrap() mount.Mounter { return m.Mounter }
