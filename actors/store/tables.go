package store

import (
	"sort"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// Whole-store reads for a controller's restore. A restore of V volumes
// that reads each volume's rebuild state on its own makes 5 V lookups,
// each its own read transaction (on Bolt: 150,000 of them for 30,000
// volumes, queued on bbolt's metadata lock); one read of each table
// serves them all.

// Tables is a copy of every table a volume actor rebuilds from.
type Tables struct {
	Revision  uint64                      // as Revision: the tables are at least as new
	Volumes   []VolumeSpec                // as Volumes: by ID
	Workloads []Workload                  // as Workloads: by Seq
	Statuses  []nodestatus.Status         // as NodeStatuses: by node name
	Intents   map[cloud.VolumeID][]Intent // as AllIntents
}

// TableReader is a Store that reads Tables as of one moment: in one read
// transaction (Bolt), under one lock (Memory).
type TableReader interface {
	ReadTables() (Tables, error)
}

// BulkIntents is a Store that lists the whole intent journal in one read.
type BulkIntents interface {
	// AllIntents is Intents for every volume that has any: each volume's
	// sorted by node, as Intents lists them.
	AllIntents() (map[cloud.VolumeID][]Intent, error)
}

var (
	_ TableReader = (*Memory)(nil)
	_ TableReader = (*Bolt)(nil)
	_ BulkIntents = (*Memory)(nil)
	_ BulkIntents = (*Bolt)(nil)
)

// ReadTables implements TableReader.
func (m *Memory) ReadTables() (Tables, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := Tables{Revision: m.rev, Volumes: make([]VolumeSpec, 0, len(m.volumes)), Workloads: m.workloadsLocked(),
		Statuses: make([]nodestatus.Status, 0, len(m.statuses)), Intents: m.allIntentsLocked()}
	for _, v := range m.volumes {
		t.Volumes = append(t.Volumes, v.Clone())
	}
	sort.Slice(t.Volumes, func(i, j int) bool { return t.Volumes[i].ID < t.Volumes[j].ID })
	for _, s := range m.statuses {
		t.Statuses = append(t.Statuses, s.Clone())
	}
	sort.Slice(t.Statuses, func(i, j int) bool { return t.Statuses[i].Name < t.Statuses[j].Name })
	return t, nil
}

// AllIntents implements BulkIntents.
func (m *Memory) AllIntents() (map[cloud.VolumeID][]Intent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allIntentsLocked(), nil
}

func (m *Memory) allIntentsLocked() map[cloud.VolumeID][]Intent {
	out := make(map[cloud.VolumeID][]Intent, len(m.intents))
	for vol, byNode := range m.intents {
		if len(byNode) == 0 {
			continue
		}
		ins := make([]Intent, 0, len(byNode))
		for _, in := range byNode {
			ins = append(ins, in)
		}
		out[vol] = sortIntents(ins)
	}
	return out
}
