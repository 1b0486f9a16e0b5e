package chaos

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// WrapStore records every node status write once it is durable, and the
// writes that failed; SetStoreFailRate makes writes fail on purpose.
// Writes of node statuses go through the wrapper one at a time, so that
// their stamps follow the order in which they became durable.
//
// The wrapper keeps the store's whole-store and one-volume reads
// (store.TableReader, store.BulkIntents, store.VolumeReader) where the
// store has them, so that chaos runs the restore and rebuild paths that
// tether up runs: they are reads, and nothing about them is recorded.
func (c *Checker) WrapStore(s store.Store) store.Store {
	r := &recStore{Store: s, c: c}
	bulk, ok := s.(bulkReads)
	if !ok {
		return r
	}
	if v, ok := s.(store.VolumeReader); ok {
		return &recStoreAll{recStoreBulk: &recStoreBulk{recStore: r, bulk: bulk}, vol: v}
	}
	return &recStoreBulk{recStore: r, bulk: bulk}
}

type bulkReads interface {
	store.TableReader
	store.BulkIntents
}

// recStoreBulk is a recStore over a store with whole-store reads.
type recStoreBulk struct {
	*recStore
	bulk bulkReads
}

func (s *recStoreBulk) ReadTables() (store.Tables, error) { return s.bulk.ReadTables() }
func (s *recStoreBulk) AllIntents() (map[cloud.VolumeID][]store.Intent, error) {
	return s.bulk.AllIntents()
}

// recStoreAll is a recStoreBulk over a store that also reads a volume's
// rebuild in one read (Bolt).
type recStoreAll struct {
	*recStoreBulk
	vol store.VolumeReader
}

func (s *recStoreAll) ReadVolume(id cloud.VolumeID) (store.VolumeRead, error) {
	return s.vol.ReadVolume(id)
}

// storeFaults is the checker's knob of node status write failures.
type storeFaults struct {
	mu  sync.Mutex
	p   float64
	rng *rand.Rand
}

// SetStoreFailRate makes each later node status write fail with
// store.ErrInjected with probability p (0 stops it), drawn from seed.
func (c *Checker) SetStoreFailRate(p float64, seed uint64) {
	f := &c.store
	f.mu.Lock()
	defer f.mu.Unlock()
	f.p = p
	if f.rng == nil {
		f.rng = rand.New(rand.NewPCG(seed, seed^0x570e))
	}
}

func (f *storeFaults) fail() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.p > 0 && f.rng.Float64() < f.p
}

type recStore struct {
	store.Store
	c  *Checker
	mu sync.Mutex // one status write at a time, stamped in order of durability
}

// PutNodeStatus is PutNodeStatusAt with epoch 0, as in every store.
func (s *recStore) PutNodeStatus(st nodestatus.Status) error { return s.PutNodeStatusAt(st, 0) }

// PutNodeStatusAt records the write once it is durable; a fenced write
// (ErrFenced) wrote nothing and is recorded as failed.
func (s *recStore) PutNodeStatusAt(st nodestatus.Status, epoch uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := fmt.Errorf("chaos: put node status %s: %w", st.Name, store.ErrInjected)
	if !s.c.store.fail() {
		err = s.Store.PutNodeStatusAt(st, epoch)
	}
	if err != nil {
		s.c.add(record{kind: recStatusFailed, node: st.Name, text: err.Error()})
		return err
	}
	inUse := map[cloud.VolumeID]bool{}
	for v, ok := range st.VolumesInUse {
		if ok {
			inUse[v] = true
		}
	}
	s.c.add(record{kind: recStatus, node: st.Name, status: statusRec{attached: maps.Clone(st.VolumesAttached), inUse: inUse}})
	return nil
}
