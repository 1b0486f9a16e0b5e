package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// assignMissingUIDs gives an ObjectUID to every volume, node and workload
// that has none (a file written before UIDs existed), in OpenBolt's
// transaction: nobody reads an object without one. Revision is left alone:
// the desired state did not change. Only the UID is touched; other fields,
// known or not, are kept as they are in the file.
//
// Once done, a mark in the meta bucket (keyUIDs) says so, and later opens
// skip the scan, which decoded every record (0.4 s of a 100,000-volume
// store's open): every Put of this version assigns or keeps a UID.
func assignMissingUIDs(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keyUIDs); len(v) == 8 && binary.BigEndian.Uint64(v) == uidsVersion {
		return nil
	}
	for _, name := range [][]byte{bucketVolumes, bucketNodes, bucketWorkloads} {
		b := tx.Bucket(name)
		fixed := map[string][]byte{}
		err := b.ForEach(func(k, data []byte) error {
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(data, &rec); err != nil {
				return fmt.Errorf("store: decode %s/%s: %w", name, k, err)
			}
			if uid, ok := rec["objectUid"]; ok && string(uid) != `""` {
				return nil
			}
			rec["objectUid"], _ = json.Marshal(newObjectUID())
			out, err := json.Marshal(rec)
			if err != nil {
				return fmt.Errorf("store: encode %s/%s: %w", name, k, err)
			}
			fixed[string(k)] = out
			return nil
		})
		if err != nil {
			return err
		}
		// bbolt forbids writes inside ForEach: put afterwards.
		for k, data := range fixed {
			if err := b.Put([]byte(k), data); err != nil {
				return err
			}
		}
	}
	return meta.Put(keyUIDs, binary.BigEndian.AppendUint64(nil, uidsVersion))
}

// keyUIDs, in bucketMeta, marks a store whose every object has a UID
// (value: uidsVersion). A file without it is scanned once.
var keyUIDs = []byte("uids")

// uidsVersion is keyUIDs' value.
const uidsVersion = 1
