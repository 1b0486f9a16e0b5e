package bench

import (
	"path/filepath"
	"slices"
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
// Neither is tether's report of its own work. It is kept small (a few
// slices per volume): the bench measures the heap of tether, and this
// lives in the same process.
type truth struct {
	mu sync.Mutex
	// attached[vol] = nodes whose instance has vol attached.
	attached map[cloud.VolumeID][]cloud.NodeName
	// published[vol] = the targets showing vol, with their nodes.
	published map[cloud.VolumeID][]target
	// want[vol] = the node vol should be attached and mounted on, and
	// nowhere else; bad = the volumes whose truth differs from want, kept
	// up to date on every change so that a phase's wait costs nothing.
	want map[cloud.VolumeID]cloud.NodeName
	bad  map[cloud.VolumeID]bool
	// changes counts attach and detach changes and mount calls, to tell a
	// phase that changed nothing (restart) from one that did.
	attaches, detaches, publishes, unpublishes atomic.Int64
}

type target struct {
	node cloud.NodeName
	path string
}

func newTruth() *truth {
	return &truth{attached: map[cloud.VolumeID][]cloud.NodeName{}, published: map[cloud.VolumeID][]target{},
		want: map[cloud.VolumeID]cloud.NodeName{}, bad: map[cloud.VolumeID]bool{}}
}

// nodesOf lists the distinct nodes of ts.
func nodesOf(ts []target) []cloud.NodeName {
	var out []cloud.NodeName
	for _, t := range ts {
		if !slices.Contains(out, t.node) {
			out = append(out, t.node)
		}
	}
	return out
}

// checkLocked recomputes whether v is as wanted.
func (t *truth) checkLocked(v cloud.VolumeID) {
	n, wanted := t.want[v]
	a, p := t.attached[v], nodesOf(t.published[v])
	ok := len(a) == 0 && len(p) == 0
	if wanted {
		ok = len(a) == 1 && a[0] == n && len(p) == 1 && p[0] == n
	}
	if ok {
		delete(t.bad, v)
	} else {
		t.bad[v] = true
	}
}

// setWant makes v wanted on n ("": nowhere).
func (t *truth) setWant(v cloud.VolumeID, n cloud.NodeName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n == "" {
		delete(t.want, v)
	} else {
		t.want[v] = n
	}
	t.checkLocked(v)
}

// observe follows one cloud's attachment changes.
func (t *truth) observe(c sim.Change) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.attached[c.Volume]
	if c.Attached {
		t.attaches.Add(1)
		if !slices.Contains(a, c.Node) {
			t.attached[c.Volume] = append(a, c.Node)
		}
	} else {
		t.detaches.Add(1)
		if a = slices.DeleteFunc(a, func(n cloud.NodeName) bool { return n == c.Node }); len(a) == 0 {
			delete(t.attached, c.Volume)
		} else {
			t.attached[c.Volume] = a
		}
	}
	t.checkLocked(c.Volume)
}

// load replaces the attachments with a snapshot (at start: the cloud's
// state file may hold attachments already).
func (t *truth) load(att map[cloud.VolumeID][]cloud.NodeName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.attached
	t.attached = make(map[cloud.VolumeID][]cloud.NodeName, len(att))
	for v, nodes := range att {
		t.attached[v] = slices.Clone(nodes)
		t.checkLocked(v)
	}
	for v := range old {
		t.checkLocked(v)
	}
}

func (t *truth) publish(n cloud.NodeName, path string) {
	vol := cloud.VolumeID(filepath.Base(path)) // .../volumes/<plugin>/<volume>
	t.mu.Lock()
	defer t.mu.Unlock()
	t.publishes.Add(1)
	if p := t.published[vol]; !slices.Contains(p, target{n, path}) {
		t.published[vol] = append(p, target{n, path})
	}
	t.checkLocked(vol)
}

func (t *truth) unpublish(n cloud.NodeName, path string) {
	vol := cloud.VolumeID(filepath.Base(path))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unpublishes.Add(1)
	if p := slices.DeleteFunc(t.published[vol], func(x target) bool { return x == target{n, path} }); len(p) == 0 {
		delete(t.published, vol)
	} else {
		t.published[vol] = p
	}
	t.checkLocked(vol)
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

// twice lists the volumes attached to, or published on, more than one
// node (every volume of the bench is exclusive).
func (t *truth) twice() []cloud.VolumeID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []cloud.VolumeID
	for v, a := range t.attached {
		if len(a) > 1 {
			out = append(out, v)
		}
	}
	for v, p := range t.published {
		if len(nodesOf(p)) > 1 && len(t.attached[v]) <= 1 {
			out = append(out, v)
		}
	}
	return out
}

// tracked is a node's mounter reporting its successful publishes and
// unpublishes to truth.
type tracked struct {
	mount.Mounter
	node  cloud.NodeName
	truth *truth
}

func (m tracked) Publish(staged, target string, readOnly bool) error {
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
