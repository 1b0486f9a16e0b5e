package controller

import (
	"fmt"
	"slices"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
)

// Change is one desired-state document of ApplyAll: exactly one field set.
type Change struct {
	Volume   *store.VolumeSpec
	Node     *store.NodeSpec
	Workload *store.Workload
}

func (ch Change) ref() (kind, name string, err error) {
	n := 0
	if ch.Volume != nil {
		n, kind, name = n+1, "volume", string(ch.Volume.ID)
	}
	if ch.Node != nil {
		n, kind, name = n+1, "node", string(ch.Node.Name)
	}
	if ch.Workload != nil {
		n, kind, name = n+1, "workload", ch.Workload.UID
	}
	if n != 1 {
		return "", "", fmt.Errorf("%w: a document must hold exactly one object, found %d", ErrInvalid, n)
	}
	return kind, name, nil
}

var nameKinds = map[string]string{"volume": names.KindVolume, "node": names.KindNode, "workload": names.KindWorkload}

// ApplyAll validates every change against the store and the other changes,
// then writes them in one atomic store transaction and tells the actors.
// Nothing is applied when anything is wrong. It returns one line per
// change ("volume/x created", "... configured", "... unchanged"). An error
// with a nil result means nothing was committed; with a result, the
// changes were committed and telling the actors failed.
func (c *Controller) ApplyAll(changes []Change) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.reader(len(changes))
	if err != nil {
		return nil, err
	}
	if err := c.validate(r, changes); err != nil {
		return nil, err
	}
	return c.commit(r, changes)
}

// commit writes changes, validated against r, and tells the actors (see
// ApplyAll). Caller holds c.mu.
func (c *Controller) commit(r objects, changes []Change) ([]string, error) {
	var ops []store.Op
	var result []string
	var vols orderedSet[cloud.VolumeID]
	var nodes orderedSet[cloud.NodeName]
	for _, ch := range changes {
		verb, err := verb(r, ch)
		if err != nil {
			return nil, err
		}
		kind, name, _ := ch.ref()
		result = append(result, fmt.Sprintf("%s/%s %s", kind, name, verb))
		switch {
		case ch.Volume != nil:
			v := *ch.Volume
			ops = append(ops, store.Op{PutVolume: &v})
			vols.add(v.ID)
		case ch.Node != nil:
			n := *ch.Node
			ops = append(ops, store.Op{PutNode: &n})
			nodes.add(n.Name)
		default:
			w := *ch.Workload
			old, _, err := r.Workload(w.UID)
			if err != nil {
				return nil, err
			}
			ops = append(ops, store.Op{PutWorkload: &w})
			vols.add(old.Volumes...)
			vols.add(w.Volumes...)
			nodes.add(old.Node, w.Node)
		}
	}
	if err := c.env.store.Apply(ops); err != nil {
		return nil, err
	}
	return result, c.tell(func() error {
		for _, n := range nodes.list {
			c.env.guard.Send(c.env.lookup.Node(n), wake)
		}
		if err := c.tellDesired(vols.list...); err != nil {
			return err
		}
		return c.tellAgents(nodes.list)
	})
}

// tell sends the messages that follow a committed change of the desired
// state. In embedded mode it runs at once, under c.mu, so that the
// messages arrive in the order the changes were made. In distributed mode
// it runs on a goroutine of its own: resolving an identity can wait for a
// member that died or is cut off (Proto.Actor waits up to 5 s), and a
// change must not wait for that once it is committed. Order does not
// matter there (every message carries the store revision it was read at,
// and actors ignore older ones), and what a dead member's actors miss,
// Resync tells them again.
func (c *Controller) tell(send func() error) error {
	e := c.env
	if e.cluster == nil {
		return send()
	}
	e.tells.Add(1)
	go func() {
		defer e.tells.Done()
		if err := send(); err != nil && e.ctx.Err() == nil {
			e.log.Warnf("telling the actors of a committed change (a resync tells them again): %v", err)
			c.Resync()
		}
	}()
	return nil
}

// orderedSet keeps the first-seen order of distinct non-empty names: a
// batch of 100,000 workloads must not cost a scan per name.
type orderedSet[T ~string] struct {
	seen map[T]bool
	list []T
}

func (o *orderedSet[T]) add(xs ...T) {
	for _, x := range xs {
		if x == "" || o.seen[x] {
			continue
		}
		if o.seen == nil {
			o.seen = map[T]bool{}
		}
		o.seen[x] = true
		o.list = append(o.list, x)
	}
}

// batchIndex is what a batch itself defines, for reference checks.
type batchIndex struct {
	volumes map[cloud.VolumeID]bool
	nodes   map[cloud.NodeName]bool
}

// validate checks names, duplicates, access modes and references. Caller
// holds c.mu.
func (c *Controller) validate(r objects, changes []Change) error {
	c.validations++
	b := batchIndex{volumes: map[cloud.VolumeID]bool{}, nodes: map[cloud.NodeName]bool{}}
	seen := map[string]int{}
	for i, ch := range changes {
		kind, name, err := ch.ref()
		if err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
		if err := names.ValidName(nameKinds[kind], name); err != nil {
			return fmt.Errorf("%w: document %d: %w", ErrInvalid, i+1, err)
		}
		key := kind + "/" + name
		if j, dup := seen[key]; dup {
			return fmt.Errorf("%w: document %d: %s is also document %d: one apply may name an object once", ErrInvalid, i+1, key, j+1)
		}
		seen[key] = i
		switch {
		case ch.Volume != nil:
			if ch.Volume.Mode != cloud.Exclusive && ch.Volume.Mode != cloud.MultiNode {
				return fmt.Errorf("%w: document %d: volume %q: unknown access mode", ErrInvalid, i+1, name)
			}
			if ch.Volume.ReadOnly && ch.Volume.Mode != cloud.MultiNode {
				return fmt.Errorf("%w: document %d: volume %q: read-only is a mode of multi-node volumes (ReadOnlyMany), not of %s ones",
					ErrInvalid, i+1, name, ModeName(ch.Volume.Mode, false))
			}
			if err := CheckVolumeDriver(*ch.Volume); err != nil {
				return fmt.Errorf("document %d: %w", i+1, err)
			}
			if err := checkModeKept(r, *ch.Volume); err != nil {
				return fmt.Errorf("document %d: %w", i+1, err)
			}
			b.volumes[ch.Volume.ID] = true
		case ch.Node != nil:
			b.nodes[ch.Node.Name] = true
		}
	}
	for i, ch := range changes {
		if ch.Workload != nil {
			if err := checkWorkload(r, *ch.Workload, b); err != nil {
				return fmt.Errorf("document %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// checkModeKept refuses to change an existing volume's access mode, its
// read-only flag included: the mode is the disk's, fixed when the cloud
// created it, like its type (a ReadOnlyMany disk may be made read-only,
// or made with its filesystem on it: the loop cloud's are). Its driver
// fields are fixed likewise (checkDriverKept).
func checkModeKept(r objects, v store.VolumeSpec) error {
	old, ok, err := r.Volume(v.ID)
	if err != nil || !ok {
		return err
	}
	if sameMode(old, v) {
		return checkDriverKept(old, v)
	}
	return fmt.Errorf("%w: volume %q is %s and cannot become %s: an access mode is fixed when the volume is created "+
		"(to change it, delete volume/%s, after the workloads that use it, and apply it again with the new mode once its disk is detached)",
		ErrInvalid, v.ID, ModeName(old.Mode, old.ReadOnly), ModeName(v.Mode, v.ReadOnly), v.ID)
}

func sameMode(a, b store.VolumeSpec) bool { return a.Mode == b.Mode && a.ReadOnly == b.ReadOnly }

// ModeName is the Kubernetes name of an access mode: a multi-node one is
// ReadOnlyMany when read-only, else ReadWriteMany (readOnly means nothing
// for an exclusive one).
func ModeName(m cloud.AccessMode, readOnly bool) string {
	switch {
	case m == cloud.Exclusive:
		return "ReadWriteOnce"
	case m == cloud.MultiNode && readOnly:
		return "ReadOnlyMany"
	case m == cloud.MultiNode:
		return "ReadWriteMany"
	}
	return m.String()
}

// checkWorkload: its node and volumes exist (in the store or the batch),
// its volume names are valid and listed once, read-only ones are used.
func checkWorkload(r objects, w store.Workload, b batchIndex) error {
	if err := names.ValidName(names.KindNode, string(w.Node)); err != nil {
		return fmt.Errorf("%w: workload %q: %w", ErrInvalid, w.UID, err)
	}
	if _, ok, err := r.Node(w.Node); err != nil {
		return err
	} else if !ok && !b.nodes[w.Node] {
		return fmt.Errorf("%w: workload %q names unknown node %q", ErrInvalid, w.UID, w.Node)
	}
	for i, v := range w.Volumes {
		if err := names.ValidName(names.KindVolume, string(v)); err != nil {
			return fmt.Errorf("%w: workload %q: %w", ErrInvalid, w.UID, err)
		}
		if slices.Contains(w.Volumes[:i], v) {
			return fmt.Errorf("%w: workload %q lists volume %q twice", ErrInvalid, w.UID, v)
		}
		if _, ok, err := r.Volume(v); err != nil {
			return err
		} else if !ok && !b.volumes[v] {
			return fmt.Errorf("%w: workload %q names unknown volume %q", ErrInvalid, w.UID, v)
		}
	}
	for _, v := range w.ReadOnly {
		if !slices.Contains(w.Volumes, v) {
			return fmt.Errorf("%w: workload %q lists %q read-only but does not use it", ErrInvalid, w.UID, v)
		}
	}
	return nil
}

// verb says what applying ch will do.
func verb(r objects, ch Change) (string, error) {
	switch {
	case ch.Volume != nil: // the store's ObjectUID is no part of a document
		old, ok, err := r.Volume(ch.Volume.ID)
		return verbOf(ok, ok && sameMode(old, *ch.Volume) && store.SameDriverFields(old, *ch.Volume)), err
	case ch.Node != nil:
		_, ok, err := r.Node(ch.Node.Name)
		return verbOf(ok, ok), err
	}
	old, ok, err := r.Workload(ch.Workload.UID)
	same := ok && old.Node == ch.Workload.Node && slices.Equal(old.Volumes, ch.Workload.Volumes) && slices.Equal(old.ReadOnly, ch.Workload.ReadOnly)
	return verbOf(ok, same), err
}

func verbOf(existed, same bool) string {
	switch {
	case same:
		return "unchanged"
	case existed:
		return "configured"
	}
	return "created"
}

// objects is what validating a batch reads: the store itself, or for a big
// batch a snapshot of it (reader).
type objects interface {
	Volume(cloud.VolumeID) (store.VolumeSpec, bool, error)
	Node(cloud.NodeName) (store.NodeSpec, bool, error)
	Workload(uid string) (store.Workload, bool, error)
}

// reader is what a batch of n changes reads the store through: a batch of
// bulkTell or more reads the volumes, nodes and workloads once (three
// range reads) instead of up to four reads per document; on etcd each read
// is a round trip. Caller holds c.mu, so in one process nothing changes
// the store meanwhile; between members, the store's optimistic Apply is
// what keeps a batch consistent, as before.
func (c *Controller) reader(n int) (objects, error) {
	if !c.bulk(n) {
		return c.env.store, nil
	}
	vols, err := c.env.store.Volumes()
	if err != nil {
		return nil, err
	}
	nodes, err := c.env.store.Nodes()
	if err != nil {
		return nil, err
	}
	ws, err := c.env.store.Workloads()
	if err != nil {
		return nil, err
	}
	s := &snapshot{volumes: make(map[cloud.VolumeID]store.VolumeSpec, len(vols)), nodes: make(map[cloud.NodeName]store.NodeSpec, len(nodes)),
		workloads: make(map[string]store.Workload, len(ws))}
	for _, v := range vols {
		s.volumes[v.ID] = v
	}
	for _, n := range nodes {
		s.nodes[n.Name] = n
	}
	for _, w := range ws {
		s.workloads[w.UID] = w
	}
	return s, nil
}

// snapshot is objects from one read of each kind.
type snapshot struct {
	volumes   map[cloud.VolumeID]store.VolumeSpec
	nodes     map[cloud.NodeName]store.NodeSpec
	workloads map[string]store.Workload
}

func (s *snapshot) Volume(id cloud.VolumeID) (store.VolumeSpec, bool, error) {
	v, ok := s.volumes[id]
	return v, ok, nil
}

func (s *snapshot) Node(n cloud.NodeName) (store.NodeSpec, bool, error) {
	v, ok := s.nodes[n]
	return v, ok, nil
}

func (s *snapshot) Workload(uid string) (store.Workload, bool, error) {
	v, ok := s.workloads[uid]
	return v, ok, nil
}
