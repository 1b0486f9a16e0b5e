package controller

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// mapsStore notes which map each node status write is given for
// VolumesInUse, and can fail the next writes.
type mapsStore struct {
	*store.Memory
	mu     sync.Mutex
	inUse  []uintptr
	writes []nodestatus.Status
	fail   int
}

func (m *mapsStore) PutNodeStatusAt(s nodestatus.Status, epoch uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail > 0 {
		m.fail--
		return errors.New("disk on fire")
	}
	m.inUse = append(m.inUse, reflect.ValueOf(s.VolumesInUse).Pointer())
	m.writes = append(m.writes, s.Clone())
	return m.Memory.PutNodeStatusAt(s, epoch)
}

func (m *mapsStore) last() (nodestatus.Status, []uintptr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.writes) == 0 {
		return nodestatus.Status{}, nil
	}
	return m.writes[len(m.writes)-1], slices.Clone(m.inUse)
}

// A node keeps one copy of its status: every write is given that status
// itself (not a copy made for it), and a failed write restores it in
// place. A fleet's node statuses hold an entry per volume: a second copy
// at rest, or one per write, cost as much again.
func TestNodeStatusIsKeptOnce(t *testing.T) {
	st := &mapsStore{Memory: store.NewMemory()}
	ctl, _, _ := oneNode(t, st)
	written := func(want ...cloud.VolumeID) []uintptr {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			s, ptrs := st.last()
			if s.Ready && slices.Equal(slices.Sorted(maps.Keys(s.VolumesInUse)), want) {
				return ptrs
			}
			if time.Now().After(deadline) {
				t.Fatalf("the last write says in use %v, want %v", slices.Sorted(maps.Keys(s.VolumesInUse)), want)
			}
		}
	}
	written()
	ctl.ReportVolumesInUse("n1", []cloud.VolumeID{"v1"})
	written("v1")
	ctl.ReportVolumesInUse("n1", []cloud.VolumeID{"v1", "v2"})
	written("v1", "v2")
	st.mu.Lock()
	st.fail = 1
	st.mu.Unlock()
	ctl.ReportVolumesInUse("n1", []cloud.VolumeID{"v2", "v3"}) // fails: v1 back, v3 gone
	s, err := ctl.NodeStatus("n1", 10*time.Second)
	must(t, err)
	if !slices.Equal(s.VolumesInUse, []string{"v1", "v2"}) {
		t.Fatalf("after a failed write the node says in use %v, want the written [v1 v2]", s.VolumesInUse)
	}
	ctl.ReportVolumesInUse("n1", []cloud.VolumeID{"v2", "v4"})
	ptrs := written("v2", "v4")
	// The first write may be the restore's (a new node): from the first
	// report on, every write carries the same map.
	for _, p := range ptrs[len(ptrs)-3:] {
		if p != ptrs[len(ptrs)-1] {
			t.Fatalf("the writes were given %d different maps (%v): a copy each", len(slices.Compact(slices.Clone(ptrs))), ptrs)
		}
	}
}
