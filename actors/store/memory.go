package store

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// Memory is an in-process Store. It loses everything with the process: use
// it for tests and for the embedded mode's first stage.
type Memory struct {
	mu        sync.Mutex
	volumes   map[cloud.VolumeID]VolumeSpec
	nodes     map[cloud.NodeName]NodeSpec
	workloads map[string]Workload
	byVolume  map[cloud.VolumeID]map[string]bool // volume -> workload UIDs
	byNode    map[cloud.NodeName]map[string]bool // node -> workload UIDs
	statuses  map[cloud.NodeName]nodestatus.Status
	// withVolume indexes statuses by the volumes they list (attached, in
	// use or detaching), for StatusesWithVolume: a scan of every status
	// per volume made a fleet's restore quadratic.
	withVolume map[cloud.VolumeID]map[cloud.NodeName]struct{}
	intents    map[cloud.VolumeID]map[cloud.NodeName]Intent
	seq        uint64
	rev        uint64
	failApply  int
	failStatus int

	// fences: in memory, as everything else (see localFences). Lock
	// order: fences.mu before mu.
	fences localFences
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{
		volumes:    map[cloud.VolumeID]VolumeSpec{},
		nodes:      map[cloud.NodeName]NodeSpec{},
		workloads:  map[string]Workload{},
		byVolume:   map[cloud.VolumeID]map[string]bool{},
		byNode:     map[cloud.NodeName]map[string]bool{},
		statuses:   map[cloud.NodeName]nodestatus.Status{},
		withVolume: map[cloud.VolumeID]map[cloud.NodeName]struct{}{},
		intents:    map[cloud.VolumeID]map[cloud.NodeName]Intent{},
	}
}

// Claim implements Fences, in memory like everything else of a Memory.
func (m *Memory) Claim(owner string) (uint64, error) { return m.fences.Claim(owner) }

// PutIntent implements Store.
func (m *Memory) PutIntent(in Intent) error {
	err := m.fences.write(VolumeOwner(in.Volume), in.Epoch, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.intents[in.Volume] == nil {
			m.intents[in.Volume] = map[cloud.NodeName]Intent{}
		}
		m.intents[in.Volume][in.Node] = in
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put intent of volume %q on node %q: %w", in.Volume, in.Node, err)
	}
	return nil
}

// Intents implements Store.
func (m *Memory) Intents(vol cloud.VolumeID) ([]Intent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Intent, 0, len(m.intents[vol]))
	for _, in := range m.intents[vol] {
		out = append(out, in)
	}
	return sortIntents(out), nil
}

// Revision implements Store.
func (m *Memory) Revision() (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev, nil
}

// FailNodeStatusWrites makes the next n PutNodeStatus calls fail with
// ErrInjected, changing nothing (tests of I4).
func (m *Memory) FailNodeStatusWrites(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failStatus = n
}

// FailApplies makes the next n Apply calls (single-op writes included) that
// pass validation fail with ErrInjected, changing nothing.
func (m *Memory) FailApplies(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failApply = n
}

// Apply implements Store. The batch is validated before anything changes
// and the changes themselves cannot fail, so the maps and their indexes
// never hold half a batch.
func (m *Memory) Apply(ops []Op) error {
	if err := checkOps(ops); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failApply > 0 {
		m.failApply--
		return fmt.Errorf("store: apply %d ops: %w", len(ops), ErrInjected)
	}
	for _, op := range ops {
		m.applyLocked(op)
	}
	m.rev++
	return nil
}

// applyLocked performs one op that passed Op.check.
func (m *Memory) applyLocked(op Op) {
	switch {
	case op.PutVolume != nil:
		v := op.PutVolume.Clone()
		old, ok := m.volumes[v.ID]
		v.ObjectUID = keepUID(old.ObjectUID, ok)
		m.volumes[v.ID] = v
	case op.DeleteVolume != "":
		delete(m.volumes, op.DeleteVolume)
	case op.PutNode != nil:
		n := *op.PutNode
		old, ok := m.nodes[n.Name]
		n.ObjectUID = keepUID(old.ObjectUID, ok)
		m.nodes[n.Name] = n
	case op.DeleteNode != "":
		delete(m.nodes, op.DeleteNode)
	case op.PutWorkload != nil:
		m.putWorkloadLocked(op.PutWorkload.clone())
	case op.DeleteWorkload != "":
		m.unindexLocked(op.DeleteWorkload)
		delete(m.workloads, op.DeleteWorkload)
	}
}

func (m *Memory) PutVolume(v VolumeSpec) error {
	return m.Apply([]Op{{PutVolume: &v}})
}

func (m *Memory) DeleteVolume(id cloud.VolumeID) error {
	return m.Apply([]Op{{DeleteVolume: id}})
}

func (m *Memory) Volume(id cloud.VolumeID) (VolumeSpec, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.volumes[id]
	return v.Clone(), ok, nil
}

// VolumesOf implements Store.
func (m *Memory) VolumesOf(ids []cloud.VolumeID) (map[cloud.VolumeID]VolumeSpec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[cloud.VolumeID]VolumeSpec, len(ids))
	for _, id := range ids {
		if v, ok := m.volumes[id]; ok {
			out[id] = v.Clone()
		}
	}
	return out, nil
}

func (m *Memory) Volumes() ([]VolumeSpec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]VolumeSpec, 0, len(m.volumes))
	for _, v := range m.volumes {
		out = append(out, v.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m *Memory) PutNode(n NodeSpec) error {
	return m.Apply([]Op{{PutNode: &n}})
}

func (m *Memory) DeleteNode(name cloud.NodeName) error {
	return m.Apply([]Op{{DeleteNode: name}})
}

func (m *Memory) Node(name cloud.NodeName) (NodeSpec, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[name]
	return n, ok, nil
}

func (m *Memory) Nodes() ([]NodeSpec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]NodeSpec, 0, len(m.nodes))
	for _, n := range m.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *Memory) PutWorkload(w Workload) error {
	return m.Apply([]Op{{PutWorkload: &w}})
}

// putWorkloadLocked stores w (the store's own copy), keeping the Seq and
// ObjectUID of the workload it replaces.
func (m *Memory) putWorkloadLocked(w Workload) {
	old, ok := m.workloads[w.UID]
	if ok {
		w.Seq = old.Seq
	} else {
		m.seq++
		w.Seq = m.seq
	}
	w.ObjectUID = keepUID(old.ObjectUID, ok)
	m.unindexLocked(w.UID)
	m.workloads[w.UID] = w
	if m.byNode[w.Node] == nil {
		m.byNode[w.Node] = map[string]bool{}
	}
	m.byNode[w.Node][w.UID] = true
	for _, v := range w.Volumes {
		if m.byVolume[v] == nil {
			m.byVolume[v] = map[string]bool{}
		}
		m.byVolume[v][w.UID] = true
	}
}

func (m *Memory) unindexLocked(uid string) {
	old := m.workloads[uid]
	delete(m.byNode[old.Node], uid)
	if len(m.byNode[old.Node]) == 0 {
		delete(m.byNode, old.Node)
	}
	for _, v := range old.Volumes {
		delete(m.byVolume[v], uid)
		if len(m.byVolume[v]) == 0 {
			delete(m.byVolume, v)
		}
	}
}

func (m *Memory) DeleteWorkload(uid string) error {
	return m.Apply([]Op{{DeleteWorkload: uid}})
}

func (m *Memory) Workload(uid string) (Workload, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.workloads[uid]
	return w.clone(), ok, nil
}

func (w Workload) clone() Workload {
	w.Volumes = slices.Clone(w.Volumes)
	w.ReadOnly = slices.Clone(w.ReadOnly)
	return w
}

func (m *Memory) WorkloadsOn(node cloud.NodeName) ([]Workload, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Workload, 0, len(m.byNode[node]))
	for uid := range m.byNode[node] {
		out = append(out, m.workloads[uid].clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

func (m *Memory) Workloads() ([]Workload, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workloadsLocked(), nil
}

func (m *Memory) workloadsLocked() []Workload {
	out := make([]Workload, 0, len(m.workloads))
	for _, w := range m.workloads {
		out = append(out, w.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

func (m *Memory) DesiredNodes(vol cloud.VolumeID) ([]cloud.NodeName, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ws := make([]Workload, 0, len(m.byVolume[vol]))
	for uid := range m.byVolume[vol] {
		ws = append(ws, m.workloads[uid])
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Seq < ws[j].Seq })
	return DesiredNodesOf(ws, vol), nil
}

// DesiredNodesOf computes DesiredNodes from workloads sorted by Seq.
func DesiredNodesOf(workloads []Workload, vol cloud.VolumeID) []cloud.NodeName {
	var out []cloud.NodeName
	for _, w := range workloads {
		if slices.Contains(w.Volumes, vol) && !slices.Contains(out, w.Node) {
			out = append(out, w.Node)
		}
	}
	return out
}

func (m *Memory) NodeStatus(name cloud.NodeName) (nodestatus.Status, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.statuses[name]
	return s.Clone(), ok, nil
}

func (m *Memory) PutNodeStatus(s nodestatus.Status) error { return m.PutNodeStatusAt(s, 0) }

func (m *Memory) PutNodeStatusAt(s nodestatus.Status, epoch uint64) error {
	err := m.fences.write(NodeOwner(s.Name), epoch, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.failStatus > 0 {
			m.failStatus--
			return ErrInjected
		}
		m.index(m.statuses[s.Name], false)
		m.statuses[s.Name] = s.Clone()
		m.index(s, true)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put status of node %q: %w", s.Name, err)
	}
	return nil
}

func (m *Memory) NodeStatuses() ([]nodestatus.Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]nodestatus.Status, 0, len(m.statuses))
	for _, s := range m.statuses {
		out = append(out, s.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *Memory) StatusesWithVolume(vol cloud.VolumeID) ([]nodestatus.Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []nodestatus.Status
	for n := range m.withVolume[vol] {
		out = append(out, m.statuses[n].Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// index adds s's node under every volume s lists (or, with add false,
// removes it). Caller holds mu.
func (m *Memory) index(s nodestatus.Status, add bool) {
	one := func(v cloud.VolumeID) {
		nodes := m.withVolume[v]
		switch {
		case add && nodes == nil:
			m.withVolume[v] = map[cloud.NodeName]struct{}{s.Name: {}}
		case add:
			nodes[s.Name] = struct{}{}
		default:
			delete(nodes, s.Name)
			if len(nodes) == 0 {
				delete(m.withVolume, v)
			}
		}
	}
	for v := range s.VolumesAttached {
		one(v)
	}
	for v, in := range s.VolumesInUse {
		if in {
			one(v)
		}
	}
	for v, d := range s.VolumesDetaching {
		if d {
			one(v)
		}
	}
}
