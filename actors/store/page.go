package store

import (
	"bytes"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/cloud"
)

// Pages (VolumesAfter, NodesAfter, WorkloadsAfter) go by name: Memory
// sorts the names after the cursor, Bolt seeks its keys, which are the
// names.

func (m *Memory) VolumesAfter(after cloud.VolumeID, limit int) ([]VolumeSpec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return pageOf(m.volumes, after, limit, VolumeSpec.Clone), nil
}

func (m *Memory) NodesAfter(after cloud.NodeName, limit int) ([]NodeSpec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return pageOf(m.nodes, after, limit, func(n NodeSpec) NodeSpec { return n }), nil
}

func (m *Memory) WorkloadsAfter(after string, limit int) ([]Workload, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return pageOf(m.workloads, after, limit, Workload.clone), nil
}

// pageOf returns copies of the values whose keys sort after after, in key
// order, at most limit (<= 0: all).
func pageOf[K ~string, V any](all map[K]V, after K, limit int, cp func(V) V) []V {
	keys := make([]K, 0, len(all))
	for k := range all {
		if k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = cp(all[k])
	}
	return out
}

func (b *Bolt) VolumesAfter(after cloud.VolumeID, limit int) ([]VolumeSpec, error) {
	out := []VolumeSpec{}
	err := b.view("volumes", func(tx *bolt.Tx) error {
		return scanAfter(tx, bucketVolumes, string(after), limit, func(r volumeRecord) { out = append(out, r.spec()) })
	})
	return out, err
}

func (b *Bolt) NodesAfter(after cloud.NodeName, limit int) ([]NodeSpec, error) {
	out := []NodeSpec{}
	err := b.view("nodes", func(tx *bolt.Tx) error {
		return scanAfter(tx, bucketNodes, string(after), limit, func(r nodeRecord) { out = append(out, r.spec()) })
	})
	return out, err
}

func (b *Bolt) WorkloadsAfter(after string, limit int) ([]Workload, error) {
	out := []Workload{}
	err := b.view("workloads", func(tx *bolt.Tx) error {
		return scanAfter(tx, bucketWorkloads, after, limit, func(r workloadRecord) { out = append(out, r.workload()) })
	})
	return out, err
}

// scanAfter decodes the records of bucket whose keys sort after after, in
// key order, at most limit (<= 0: all).
func scanAfter[R any](tx *bolt.Tx, bucket []byte, after string, limit int, fn func(R)) error {
	c := tx.Bucket(bucket).Cursor()
	n := 0
	for k, data := c.Seek([]byte(after)); k != nil && (limit <= 0 || n < limit); k, data = c.Next() {
		if bytes.Equal(k, []byte(after)) {
			continue
		}
		rec, err := decode[R](bucket, k, data)
		if err != nil {
			return err
		}
		fn(rec)
		n++
	}
	return nil
}
