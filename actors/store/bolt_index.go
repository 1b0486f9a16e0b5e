package store

// Secondary indexes of the Bolt store, so that the lookups every volume
// and node actor makes at its rebuild (DesiredNodes, WorkloadsOn,
// StatusesWithVolume) read a few keys instead of decoding a whole bucket:
// without them, a controller start with V volumes decodes V times every
// workload and node status, and 10,000 objects took minutes.
//
// Each index is a bucket of empty values whose keys are "<a>\x00<b>" (no
// valid name holds a NUL), kept in the same transaction as the records it
// indexes. A store from before the indexes, or with another indexVersion,
// gets them built when it is opened.

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

var (
	bucketIdxVolumeWorkloads = []byte("idx-volume-workloads") // "<volume>\x00<workload>"
	bucketIdxNodeWorkloads   = []byte("idx-node-workloads")   // "<node>\x00<workload>"
	bucketIdxVolumeStatuses  = []byte("idx-volume-statuses")  // "<volume>\x00<node>"
	indexBuckets             = [][]byte{bucketIdxVolumeWorkloads, bucketIdxNodeWorkloads, bucketIdxVolumeStatuses}

	keyIndexes = []byte("indexes") // in bucketMeta: the indexVersion built
)

// indexVersion changes whenever what the indexes hold changes; a store
// built with another is re-indexed when opened.
const indexVersion = 1

func indexKey(a, b string) []byte {
	k := make([]byte, 0, len(a)+1+len(b))
	return append(append(append(k, a...), 0), b...)
}

// indexWrites collects a transaction's index changes and writes them in
// key order (flush): bbolt inserts into a sorted in-memory node, so keys
// put in random order (a workload's node key, in an apply of 100,000
// workloads) cost a move of the node's tail each, and sorted ones do not.
// The last change of a key wins, as if each had been written at once.
type indexWrites map[string]map[string]bool // bucket -> key -> add

func (ix indexWrites) set(bucket []byte, key []byte, add bool) {
	b := ix[string(bucket)]
	if b == nil {
		b = map[string]bool{}
		ix[string(bucket)] = b
	}
	b[string(key)] = add
}

// flush writes the collected changes, bucket by bucket, in key order.
func (ix indexWrites) flush(tx *bolt.Tx) error {
	for _, name := range slices.Sorted(maps.Keys(ix)) {
		bk := tx.Bucket([]byte(name))
		for _, k := range slices.Sorted(maps.Keys(ix[name])) {
			var err error
			if ix[name][k] {
				err = bk.Put([]byte(k), nil)
			} else {
				err = bk.Delete([]byte(k))
			}
			if err != nil {
				return err
			}
		}
	}
	clear(ix)
	return nil
}

// indexWorkload adds (or, with add false, removes) w's index entries.
func indexWorkload(ix indexWrites, w Workload, add bool) {
	ix.set(bucketIdxNodeWorkloads, indexKey(string(w.Node), w.UID), add)
	for _, v := range w.Volumes {
		ix.set(bucketIdxVolumeWorkloads, indexKey(string(v), w.UID), add)
	}
}

// statusVolumes is every volume a status lists (StatusesWithVolume's
// filter, statusRecord.hasVolume).
func statusVolumes(r statusRecord) []cloud.VolumeID {
	var out []cloud.VolumeID
	for v := range r.VolumesAttached {
		out = append(out, v)
	}
	for v := range r.VolumesInUse {
		out = append(out, v)
	}
	for v := range r.VolumesDetaching {
		out = append(out, v)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(v cloud.VolumeID) bool { return !r.hasVolume(v) }) // a false entry lists nothing
}

// reindexStatus replaces the entries of old (if any) by those of r,
// touching only the keys that differ: a status rewritten because one
// volume changed state must not dirty a page of the index for each of its
// volumes (on a store of 100,000 volumes they lie on as many pages).
func reindexStatus(tx *bolt.Tx, old *statusRecord, r statusRecord) error {
	bk := tx.Bucket(bucketIdxVolumeStatuses)
	now := map[cloud.VolumeID]bool{}
	for _, v := range statusVolumes(r) {
		now[v] = true
	}
	if old != nil {
		for _, v := range statusVolumes(*old) {
			if now[v] {
				delete(now, v) // listed before and after: its key stays
				continue
			}
			if err := bk.Delete(indexKey(string(v), string(old.Name))); err != nil {
				return err
			}
		}
	}
	for _, v := range slices.Sorted(maps.Keys(now)) {
		if err := bk.Put(indexKey(string(v), string(r.Name)), nil); err != nil {
			return err
		}
	}
	return nil
}

// indexed calls fn with the second half of every key of bucket under a.
func indexed(tx *bolt.Tx, bucket []byte, a string, fn func(b string) error) error {
	prefix := indexKey(a, "")
	c := tx.Bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if err := fn(string(k[len(prefix):])); err != nil {
			return err
		}
	}
	return nil
}

// indexedWorkloads returns the workloads the index lists under a, by Seq.
func indexedWorkloads(tx *bolt.Tx, bucket []byte, a string) ([]Workload, error) {
	out := []Workload{}
	err := indexed(tx, bucket, a, func(uid string) error {
		rec, ok, err := get[workloadRecord](tx, bucketWorkloads, uid)
		if err != nil || !ok {
			return err
		}
		out = append(out, rec.workload())
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

// ensureIndexes builds the indexes unless the store has them at
// indexVersion.
func ensureIndexes(tx *bolt.Tx) error {
	if v := tx.Bucket(bucketMeta).Get(keyIndexes); len(v) == 8 && binary.BigEndian.Uint64(v) == indexVersion {
		for _, name := range indexBuckets {
			if tx.Bucket(name) == nil {
				return rebuildIndexes(tx)
			}
		}
		return nil
	}
	return rebuildIndexes(tx)
}

func rebuildIndexes(tx *bolt.Tx) error {
	for _, name := range indexBuckets {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	ix := indexWrites{}
	err := scanErr(tx, bucketWorkloads, func(r workloadRecord) error { indexWorkload(ix, r.workload(), true); return nil })
	if err == nil {
		err = ix.flush(tx)
	}
	if err != nil {
		return err
	}
	err = scanErr(tx, bucketStatuses, func(r statusRecord) error { return reindexStatus(tx, nil, r) })
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyIndexes, binary.BigEndian.AppendUint64(nil, indexVersion))
}

// scanErr is scan whose fn may fail.
func scanErr[R any](tx *bolt.Tx, bucket []byte, fn func(R) error) error {
	return tx.Bucket(bucket).ForEach(func(k, data []byte) error {
		rec, err := decode[R](bucket, k, data)
		if err != nil {
			return err
		}
		return fn(rec)
	})
}

// statusesIndexed returns the statuses the index lists for vol, by name.
func statusesIndexed(tx *bolt.Tx, vol cloud.VolumeID) ([]nodestatus.Status, error) {
	var out []nodestatus.Status
	err := indexed(tx, bucketIdxVolumeStatuses, string(vol), func(node string) error {
		rec, ok, err := get[statusRecord](tx, bucketStatuses, node)
		if err != nil || !ok {
			return err
		}
		out = append(out, rec.status())
		return nil
	})
	return out, err
}
