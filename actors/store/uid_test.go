package store

import (
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/cloud"
)

// uids reads the ObjectUIDs of volume v, node n and workload w ("" when
// missing).
func uids(t *testing.T, s Store) [3]string {
	t.Helper()
	v, _, err1 := s.Volume("v")
	n, _, err2 := s.Node("n")
	w, _, err3 := s.Workload("w")
	for _, err := range []error{err1, err2, err3} {
		must(t, err)
	}
	return [3]string{v.ObjectUID, n.ObjectUID, w.ObjectUID}
}

func putAll(t *testing.T, s Store, mode cloud.AccessMode, uid string) {
	t.Helper()
	must(t, s.Apply([]Op{
		{PutVolume: &VolumeSpec{ID: "v", Mode: mode, ObjectUID: uid}},
		{PutNode: &NodeSpec{Name: "n", ObjectUID: uid}},
		{PutWorkload: &Workload{UID: "w", Node: "n", ObjectUID: uid}},
	}))
}

func TestObjectUIDs(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		putAll(t, s, cloud.Exclusive, "caller's")
		created := uids(t, s)
		seen := map[string]bool{}
		for _, u := range created {
			if len(u) != 32 || u == "caller's" || seen[u] {
				t.Fatalf("created UIDs %q: want 32 hex digits each, assigned by the store, all different", created)
			}
			seen[u] = true
		}
		// Replaced (another spec, another UID asked for): kept.
		putAll(t, s, cloud.MultiNode, "other")
		if got := uids(t, s); got != created {
			t.Fatalf("after replace: UIDs %q, want %q kept", got, created)
		}
		// Deleted and created again, in one batch too: new UIDs.
		must(t, s.Apply([]Op{{DeleteVolume: "v"}, {DeleteNode: "n"}, {DeleteWorkload: "w"}}))
		if got := uids(t, s); got != [3]string{} {
			t.Fatalf("after delete: UIDs %q", got)
		}
		putAll(t, s, cloud.Exclusive, created[0])
		again := uids(t, s)
		must(t, s.Apply([]Op{{DeleteVolume: "v"}, {PutVolume: &VolumeSpec{ID: "v"}}}))
		third := uids(t, s)
		for i := range created {
			if again[i] == created[i] || again[i] == "" || third[0] == again[0] {
				t.Fatalf("recreated: UIDs %q then %q, volume's then %q; want new ones each time", created, again, third)
			}
		}
		// Lists carry them too.
		vols, _ := s.Volumes()
		nodes, _ := s.Nodes()
		ws, _ := s.Workloads()
		if vols[0].ObjectUID != third[0] || nodes[0].ObjectUID != again[1] || ws[0].ObjectUID != again[2] {
			t.Fatalf("lists: %+v %+v %+v; want UIDs %q", vols, nodes, ws, third)
		}
	})
}

// A file written before ObjectUIDs existed opens, every object gets one,
// and it is the same after the next open.
func TestBoltAssignsUIDsToOldFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		for bucket, kv := range map[string][2]string{
			"volumes":   {"v", `{"id":"v","mode":1}`},
			"nodes":     {"n", `{"name":"n"}`},
			"workloads": {"w", `{"uid":"w","node":"n","volumes":["v"],"readOnly":null,"seq":7}`},
		} {
			b, err := tx.CreateBucket([]byte(bucket))
			if err != nil {
				return err
			}
			if err := b.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, db.Close())

	b, err := OpenBolt(path)
	must(t, err)
	first := uids(t, b)
	for _, u := range first {
		if len(u) != 32 {
			t.Fatalf("UIDs after the first open: %q", first)
		}
	}
	w, _, _ := b.Workload("w")
	v, _, _ := b.Volume("v")
	if w.Seq != 7 || w.Node != "n" || !reflect.DeepEqual(w.Volumes, []cloud.VolumeID{"v"}) || v.Mode != cloud.MultiNode {
		t.Fatalf("other fields changed: %+v %+v", w, v)
	}
	if rev, _ := b.Revision(); rev != 0 {
		t.Fatalf("Revision = %d, want 0: assigning UIDs changes no desired state", rev)
	}
	// Marked done: later opens do not scan again.
	must(t, b.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyUIDs); len(v) != 8 {
			t.Errorf("no mark of UIDs assigned after the open: %q", v)
		}
		return nil
	}))
	must(t, b.Close())
	b = openBolt(t, path)
	if again := uids(t, b); again != first {
		t.Fatalf("UIDs after reopen %q, want %q", again, first)
	}
}
