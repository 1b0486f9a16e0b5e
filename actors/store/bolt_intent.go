package store

import (
	"bytes"
	"encoding/json"
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
func (b *Bolt) Intents(vol cloud.VolumeID) ([]Intent, error) {
	out := []Intent{}
	prefix := []byte(intentKey(vol, ""))
	err := b.view("intents", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketIntents).Cursor()
		for k, data := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, data = c.Next() {
			var rec intentRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				return fmt.Errorf("decode %s/%q: %w", bucketIntents, k, err)
			}
			out = append(out, Intent(rec))
		}
		return nil
	})
	return sortIntents(out), err
}
