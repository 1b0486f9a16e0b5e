package store

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// VolumeRead is what a volume actor rebuilds from, read as of one moment:
// what Revision, Volume, DesiredNodes, StatusesWithVolume and Intents give
// for the volume, in that order.
type VolumeRead struct {
	Revision uint64
	Spec     VolumeSpec
	Found    bool
	Desired  []cloud.NodeName
	Statuses []nodestatus.Status
	Intents  []Intent
}

// VolumeReader is a Store that reads a VolumeRead in one read: every
// volume actor that starts (a fleet's apply starts one per new volume)
// otherwise takes five read transactions, each queued on bbolt's metadata
// lock with every other actor's.
type VolumeReader interface {
	ReadVolume(cloud.VolumeID) (VolumeRead, error)
}

var (
	_ VolumeReader = (*Bolt)(nil)
	_ VolumeReader = (*Etcd)(nil)
)

// ReadVolume implements VolumeReader: with a cache, one read of it (one
// freshness barrier, one snapshot); without, the five reads in order,
// Revision first, as a Store without ReadVolume is read.
func (e *Etcd) ReadVolume(id cloud.VolumeID) (VolumeRead, error) {
	var r VolumeRead
	err := e.read("volume "+string(id)+" to rebuild", func(ctx context.Context, kv kvReader) error {
		r = VolumeRead{}
		rev, err := kv.get(ctx, e.k.revision())
		if err != nil {
			return err
		}
		if r.Revision, err = decodeCounter(rev); err != nil {
			return err
		}
		v, err := kv.get(ctx, e.k.volume(id))
		if err != nil {
			return err
		}
		if v != nil {
			rec, err := decodeRecord[volumeRecord](v)
			if err != nil {
				return err
			}
			r.Spec, r.Found = rec.spec(), true
		}
		kvs, err := indexedKVs(ctx, kv, e.k.volumeWorkloads(), string(id), e.k.workload)
		if err != nil {
			return err
		}
		ws, err := decodeAll(kvs, workloadRecord.workload)
		if err != nil {
			return err
		}
		sortBySeq(ws)
		r.Desired = DesiredNodesOf(ws, id)
		if r.Statuses, err = e.statusesWithVolume(ctx, kv, id); err != nil {
			return err
		}
		r.Intents, err = e.intentsOf(ctx, kv, id)
		return err
	})
	if err != nil {
		return VolumeRead{}, err
	}
	return r, nil
}

// ReadVolume implements VolumeReader in one read transaction.
func (b *Bolt) ReadVolume(id cloud.VolumeID) (VolumeRead, error) {
	var r VolumeRead
	err := b.view("volume "+string(id)+" to rebuild", func(tx *bolt.Tx) (err error) {
		if r.Revision, err = counter(tx, keyRevision); err != nil {
			return err
		}
		rec, ok, err := get[volumeRecord](tx, bucketVolumes, string(id))
		if err != nil {
			return err
		}
		r.Spec, r.Found = rec.spec(), ok
		ws, err := indexedWorkloads(tx, bucketIdxVolumeWorkloads, string(id))
		if err != nil {
			return err
		}
		r.Desired = DesiredNodesOf(ws, id)
		if r.Statuses, err = statusesIndexed(tx, id); err != nil {
			return err
		}
		r.Intents, err = intentsOf(tx, id)
		return err
	})
	if err != nil {
		return VolumeRead{}, err
	}
	return r, nil
}

// intentsOf lists the intents of vol recorded in tx, sorted by node.
func intentsOf(tx *bolt.Tx, vol cloud.VolumeID) ([]Intent, error) {
	out := []Intent{}
	prefix := []byte(intentKey(vol, ""))
	c := tx.Bucket(bucketIntents).Cursor()
	for k, data := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, data = c.Next() {
		var rec intentRecord
		if err := unmarshalRecord(data, &rec); err != nil {
			return nil, fmt.Errorf("decode %s/%q: %w", bucketIntents, k, err)
		}
		out = append(out, Intent(rec))
	}
	return sortIntents(out), nil
}
