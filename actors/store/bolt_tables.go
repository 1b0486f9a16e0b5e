package store

import (
	"bytes"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// ReadTables implements TableReader in one read transaction: one scan of
// each bucket, no index lookups. It holds bbolt's mmap lock for the scan
// (a write that grows the file waits for it), which at a restore is the
// price of not taking it five times per volume.
func (b *Bolt) ReadTables() (Tables, error) {
	t := Tables{Volumes: []VolumeSpec{}, Workloads: []Workload{}, Statuses: []nodestatus.Status{}}
	err := b.view("tables", func(tx *bolt.Tx) (err error) {
		if t.Revision, err = counter(tx, keyRevision); err != nil {
			return err
		}
		if err := scan(tx, bucketVolumes, func(r volumeRecord) { t.Volumes = append(t.Volumes, r.spec()) }); err != nil {
			return err
		}
		if err := scan(tx, bucketWorkloads, func(r workloadRecord) { t.Workloads = append(t.Workloads, r.workload()) }); err != nil {
			return err
		}
		if err := scan(tx, bucketStatuses, func(r statusRecord) { t.Statuses = append(t.Statuses, r.status()) }); err != nil {
			return err
		}
		t.Intents, err = allIntents(tx)
		return err
	})
	if err != nil {
		return Tables{}, err
	}
	sort.Slice(t.Workloads, func(i, j int) bool { return t.Workloads[i].Seq < t.Workloads[j].Seq })
	return t, nil
}

// AllIntents implements BulkIntents: one cursor scan of the journal.
func (b *Bolt) AllIntents() (out map[cloud.VolumeID][]Intent, err error) {
	err = b.view("all intents", func(tx *bolt.Tx) (err error) {
		out, err = allIntents(tx)
		return err
	})
	return out, err
}

// allIntents groups the journal by the volume of each key (intentKey):
// the key range Intents reads for that volume.
func allIntents(tx *bolt.Tx) (map[cloud.VolumeID][]Intent, error) {
	out := map[cloud.VolumeID][]Intent{}
	err := tx.Bucket(bucketIntents).ForEach(func(k, data []byte) error {
		rec, err := decode[intentRecord](bucketIntents, k, data)
		if err != nil {
			return err
		}
		vol, _, _ := bytes.Cut(k, []byte{0})
		out[cloud.VolumeID(vol)] = append(out[cloud.VolumeID(vol)], Intent(rec))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, ins := range out {
		sortIntents(ins) // key order is node order already; sorted as Intents sorts, whatever the records say
	}
	return out, nil
}
