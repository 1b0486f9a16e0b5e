package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// Store files for the tests of OpenBolt's verification, and ways to damage
// them.

type builtStore struct {
	once sync.Once
	data []byte
	err  error
}

var big, small builtStore

// bigStore returns the bytes of a store of about 40 MB, built once per test
// binary: 5,000 volumes, 200 nodes, 30,000 workloads of 10 volumes each and
// 300 node statuses of 1,000 volumes each (each bigger than a page).
func bigStore(t testing.TB) []byte { return big.get(t, 10) }

// smallStore is bigStore at a tenth of the size, for tests that need pages
// of every kind but not the size.
func smallStore(t testing.TB) []byte { return small.get(t, 1) }

func (s *builtStore) get(t testing.TB, scale int) []byte {
	t.Helper()
	s.once.Do(func() { s.data, s.err = buildStore(scale) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.data
}

func buildStore(scale int) ([]byte, error) {
	dir, err := os.MkdirTemp("", "bigstore")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tether.db")
	b, err := CreateBolt(path)
	if err != nil {
		return nil, err
	}
	vol := func(i int) cloud.VolumeID { return cloud.VolumeID(fmt.Sprintf("vol-%06d", i%5000)) }
	var ops []Op
	for i := range 5000 {
		ops = append(ops, Op{PutVolume: &VolumeSpec{ID: vol(i), Mode: cloud.MultiNode}})
	}
	for i := range 200 {
		ops = append(ops, Op{PutNode: &NodeSpec{Name: cloud.NodeName(fmt.Sprintf("node-%03d", i))}})
	}
	for i := range 3000 * scale {
		w := Workload{UID: fmt.Sprintf("workload-%06d", i), Node: cloud.NodeName(fmt.Sprintf("node-%03d", i%200))}
		for j := range 10 {
			w.Volumes = append(w.Volumes, vol(i*10+j))
		}
		ops = append(ops, Op{PutWorkload: &w})
	}
	for len(ops) > 0 {
		n := min(len(ops), 2000)
		if err := b.Apply(ops[:n]); err != nil {
			return nil, errors.Join(err, b.Close())
		}
		ops = ops[n:]
	}
	for i := range 30 * scale {
		s := nodestatus.Status{Name: cloud.NodeName(fmt.Sprintf("node-%03d", i)), Ready: true,
			VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{}}
		for j := range 1000 {
			s.VolumesAttached[vol(i*1000+j)] = fmt.Sprintf("/dev/xvd%04d", j)
			s.VolumesInUse[vol(i*1000+j)] = true
		}
		if err := b.PutNodeStatus(s); err != nil {
			return nil, errors.Join(err, b.Close())
		}
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// storeFile writes data as a new store file of the test and returns its
// path.
func storeFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tether.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// damaged returns a copy of data with n seeded random bytes at off.
func damaged(data []byte, off, n int, seed uint64) []byte {
	out := bytes.Clone(data)
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := off; i < off+n; i++ {
		out[i] = byte(rng.UintN(256))
	}
	return out
}

// storeSize returns a store file's page size and pages in use (its
// high-water mark).
func storeSize(t *testing.T, data []byte) (pageSize, pages int) {
	t.Helper()
	return os.Getpagesize(), int(storeMeta(t, data).hwm)
}

// storeMeta returns the current meta page of a store file.
func storeMeta(t *testing.T, data []byte) boltMeta {
	t.Helper()
	m, err := readMeta(bytes.NewReader(data), 0)
	if m1, err1 := readMeta(bytes.NewReader(data), int64(os.Getpagesize())); err1 == nil && (err != nil || m1.txid > m.txid) {
		m, err = m1, nil
	}
	must(t, err)
	return m
}

// pageHolding returns the offset of the page holding s.
func pageHolding(t *testing.T, data []byte, s string) int {
	t.Helper()
	inUse := usedPages(t, data)
	ps := os.Getpagesize()
	for from := 0; ; {
		at := bytes.Index(data[from:], []byte(s))
		if at < 0 {
			t.Fatalf("%q not found in a page in use", s)
		}
		off := (from + at) / ps * ps
		if inUse[uint64(off/ps)] { // not a stale copy in a free page
			return off
		}
		from += at + len(s)
	}
}

// firstBranch returns the offset of the first branch page in use.
func firstBranch(t *testing.T, data []byte) int {
	t.Helper()
	ps, hwm := storeSize(t, data)
	for id := 2; id < hwm; id++ {
		p := data[id*ps:]
		if native.Uint64(p) == uint64(id) && native.Uint16(p[8:]) == branchPage && native.Uint16(p[10:]) > 1 {
			return id * ps
		}
	}
	t.Fatal("no branch page in the file")
	return 0
}

// pointToSelf returns a copy of data whose branch page at off has its
// second child be the page itself: a cycle.
func pointToSelf(data []byte, off int) []byte {
	out := bytes.Clone(data)
	native.PutUint64(out[off+pageHeader+elementSize+8:], native.Uint64(out[off:]))
	return out
}

// initBoltNoBuckets makes path a bbolt file with one bucket, not tether's.
func initBoltNoBuckets(path string) error {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("other"))
		return err
	})
	return errors.Join(err, db.Close())
}

// middlePagesInUse returns the offset of the first page at or past the
// middle of the data pages that, with the two after it, the current tree
// uses: damage there is damage to the store, not to free space (a store
// written by many transactions has free pages anywhere below its end).
func middlePagesInUse(t *testing.T, data []byte) int {
	t.Helper()
	m := storeMeta(t, data)
	ps := uint64(os.Getpagesize())
	inUse := usedPages(t, data)
	for id := m.hwm / 2; id+2 < m.hwm; id++ {
		if inUse[id] && inUse[id+1] && inUse[id+2] {
			return int(id * ps)
		}
	}
	t.Fatal("no three pages in use in a row past the middle")
	return 0
}

// usedPages is the set of pages the current tree (and freelist) uses.
func usedPages(t *testing.T, data []byte) map[uint64]bool {
	t.Helper()
	w := &walker{f: bytes.NewReader(data), size: int64(len(data)), pageSize: uint64(os.Getpagesize())}
	must(t, w.walk(storeMeta(t, data)))
	return w.seen
}
