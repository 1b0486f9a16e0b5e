package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/cloud"
)

type intentRecord struct {
	Volume   cloud.VolumeID `json:"volume"`
	Node     cloud.NodeName `json:"node"`
	Op       uint64         `json:"op"`
	Attach   bool           `json:"attach"`
	Deadline time.Time      `json:"deadline"`
	Epoch    uint64         `json:"epoch,omitempty"` // missing in files from before fences: 0
}

// PutIntent implements Store. Concurrent intents share one transaction
// (bbolt's Batch): each caller still returns only once its intent is
// durable. A fenced intent holds its fence until it is durable.
func (b *Bolt) PutIntent(in Intent) error {
	err := b.fences.write(VolumeOwner(in.Volume), in.Epoch, func() error {
		return b.guard(b.db.Batch, func(tx *bolt.Tx) error {
			return put(tx, bucketIntents, intentKey(in.Volume, in.Node), intentRecord(in))
		})
	})
	if err != nil {
		return fmt.Errorf("store: put intent of volume %q on node %q: %w", in.Volume, in.Node, err)
	}
	return nil
}

// Intents implements Store.
func (b *Bolt) Intents(vol cloud.VolumeID) (out []Intent, err error) {
	err = b.view("intents", func(tx *bolt.Tx) (err error) {
		out, err = intentsOf(tx, vol)
		return err
	})
	if err != nil {
		return []Intent{}, err
	}
	return out, nil
}
