package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// assignMissingUIDs gives an ObjectUID to every volume, node and workload
// that has none (a file written before UIDs existed), in OpenBolt's
// transaction: nobody reads an object without one. Revision is left alone:
// the desired state did not change. Only the UID is touched; other fields,
// known or not, are kept as they are in the file.
func assignMissingUIDs(tx *bolt.Tx) error {
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
	return nil
}
