package mount

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tether/tether/node/layout"
)

// Memory is an in-memory mount table standing in for the kernels of many
// machines: each layout root (a node's data directory) has its own table,
// as each machine has its own mount namespace, and it outlives the
// mounters made over it, as a machine's mounts outlive an agent restart.
// tether bench --mounter memory runs every agent's logic (reconcile, the
// attach handshake, reconstruction, teardown) over it, with the kernel's
// mount work left out, the way Kubernetes' own benchmarks use a fake
// volume plugin: the control plane is measured on its own.
//
// It keeps mount identities as the real mounters do: a stage shows its
// source (the directory given, made absolute and clean, never read: an
// empty one is refused, a missing one is not), a publish shows its stage
// (Inspect names the staged path, as the symlink and bind mounters do), a
// second stage or publish of the same target from another source is
// ErrConflict, and a publish from a path that is not staged fails as a
// bind of a missing directory does. Unstaging leaves the stage's publishes
// mounted, as unmounting a bind mount's source does.
// Targets are checked as the real mounters check them (ErrOutside
// above or at the root). Nothing touches the disk: no directory is made or
// removed, no system call is counted. Scan reads the table, not the disk
// (through the wrappers that Unwrap to it).
type Memory struct {
	mu    sync.Mutex
	roots map[string]*memTable
}

type memTable struct {
	mu     sync.Mutex
	mounts map[string]memMount // by clean absolute target path
}

type memMount struct {
	source   string // a stage's source; a publish's stage
	readOnly bool
	publish  bool
}

// NewMemory returns an empty table.
func NewMemory() *Memory { return &Memory{roots: map[string]*memTable{}} }

// Mounter returns the mounter of the machine whose data directory is l's
// root: the table it keeps there, made on first use.
func (m *Memory) Mounter(l layout.Layout) Mounter {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.roots[l.Root()]
	if t == nil {
		t = &memTable{mounts: map[string]memMount{}}
		m.roots[l.Root()] = t
	}
	return memMounter{l: l, t: t}
}

// Mounts is how many stages and publishes the table holds, all roots
// together.
func (m *Memory) Mounts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.roots {
		t.mu.Lock()
		n += len(t.mounts)
		t.mu.Unlock()
	}
	return n
}

type memMounter struct {
	l layout.Layout
	t *memTable
}

func (memMounter) Name() string { return "memory" }

func (m memMounter) Stage(source, target string) error {
	return m.mount(OpStage, source, target, false, false)
}

func (m memMounter) Publish(staged, target string, readOnly bool) error {
	return m.mount(OpPublish, staged, target, readOnly, true)
}

func (m memMounter) mount(op Op, source, target string, readOnly, publish bool) error {
	target, err := checkTarget(m.l, op, target)
	if err != nil {
		return err
	}
	if source == "" {
		return fmt.Errorf("mount: %s %s: empty source: %w", op, target, ErrUnsafeSource)
	}
	source, err = filepath.Abs(source)
	if err != nil {
		return fmt.Errorf("mount: %s %s: source: %w", op, target, err)
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	shows := source
	if publish {
		if st, ok := m.t.mounts[source]; !ok || st.publish {
			return fmt.Errorf("mount: %s %s: staged %s is not a stage here: %w", op, target, source, errNotStaged)
		}
	}
	if cur, ok := m.t.mounts[target]; ok {
		if cur.source != shows || cur.publish != publish {
			return fmt.Errorf("mount: %s %s: shows %s, not %s: %w", op, target, cur.source, shows, ErrConflict)
		}
	}
	m.t.mounts[target] = memMount{source: shows, readOnly: readOnly, publish: publish}
	return nil
}

// errNotStaged: a publish from a target that shows nothing.
var errNotStaged = fmt.Errorf("source not mounted")

func (m memMounter) Unstage(target string) error { return m.unmount(OpUnstage, target) }

func (m memMounter) Unpublish(target string) error { return m.unmount(OpUnpublish, target) }

func (m memMounter) unmount(op Op, target string) error {
	target, err := checkTarget(m.l, op, target)
	if err != nil {
		return err
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	delete(m.t.mounts, target)
	return nil
}

func (m memMounter) Inspect(target string) (State, string, error) {
	target, err := checkTarget(m.l, OpInspect, target)
	if err != nil {
		return Absent, "", err
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if cur, ok := m.t.mounts[target]; ok {
		return Mounted, cur.source, nil
	}
	return Absent, "", nil
}

// scan is Scan of the table: every target at a stage or publish path of
// the layout, as the walk of the disk would find it mounted. Targets at
// other paths are not found (the walk would not look there); names that
// are not valid are Invalid.
func (m memMounter) scan() Found {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	var f Found
	root := m.l.Root() + string(filepath.Separator)
	for target, mt := range m.t.mounts {
		e, ok := entryAt(strings.Split(strings.TrimPrefix(target, root), string(filepath.Separator)))
		if !ok {
			continue
		}
		e.Path, e.State, e.Source = target, Mounted, mt.source
		if bad := invalidName(e); bad {
			f.Invalid = append(f.Invalid, target)
			continue
		}
		f.Entries = append(f.Entries, e)
	}
	return f
}

// entryAt reads a target's place in the layout from its path below the
// root: plugins/<plugin>/mounts/<volume> or
// pods/<uid>/volumes/<plugin>/<volume>.
func entryAt(parts []string) (Entry, bool) {
	switch {
	case len(parts) == 4 && parts[0] == layout.PluginsDir && parts[2] == layout.MountsDir:
		return Entry{Kind: KindStage, Plugin: parts[1], Volume: parts[3]}, true
	case len(parts) == 5 && parts[0] == layout.PodsDir && parts[2] == layout.VolumesDir:
		return Entry{Kind: KindPublish, UID: parts[1], Plugin: parts[3], Volume: parts[4]}, true
	}
	return Entry{}, false
}

func invalidName(e Entry) bool {
	if e.UID != "" && layout.ValidName(layout.KindWorkload, e.UID) != nil {
		return true
	}
	return layout.ValidName(layout.KindPlugin, e.Plugin) != nil || layout.ValidName(layout.KindVolume, e.Volume) != nil
}

// Unwrapper is a Mounter wrapping another (metrics, checks): Scan reads
// through it to an in-memory table.
type Unwrapper interface {
	Unwrap() Mounter
}

// memoryOf returns the in-memory mounter under m's wrappers, if any.
func memoryOf(m Mounter) (memMounter, bool) {
	for {
		switch x := m.(type) {
		case memMounter:
			return x, true
		case Unwrapper:
			m = x.Unwrap()
		default:
			return memMounter{}, false
		}
	}
}
