package store

import (
	bolt "go.etcd.io/bbolt"
)

// keyIdentity, in bucketMeta, holds the store's identity: a random ID
// written once, when tether first creates its data directory, and shared
// with the cloud's owner tag and the node agents' directories. A store
// whose identity is missing or different from theirs is not the store that
// made them (lost, emptied, or copied from elsewhere), and tether refuses
// to act on it (bootstrap's startup checks).
var keyIdentity = []byte("identity")

// Identity returns the store's identity, "" if none was ever set.
func (b *Bolt) Identity() (string, error) {
	var id string
	err := b.guard(b.db.View, func(tx *bolt.Tx) error {
		if m := tx.Bucket(bucketMeta); m != nil {
			id = string(m.Get(keyIdentity))
		}
		return nil
	})
	return id, err
}

// SetIdentity records the store's identity (durably, before it returns).
func (b *Bolt) SetIdentity(id string) error {
	return b.update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return m.Put(keyIdentity, []byte(id))
	})
}

// Objects counts what the store holds: volumes, nodes, workloads and node
// statuses. Zero means a store that knows of nothing.
func (b *Bolt) Objects() (int, error) {
	n := 0
	err := b.guard(b.db.View, func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketVolumes, bucketNodes, bucketWorkloads, bucketStatuses} {
			if bk := tx.Bucket(name); bk != nil {
				n += bk.Stats().KeyN
			}
		}
		return nil
	})
	return n, err
}
