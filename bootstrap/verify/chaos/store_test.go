package chaos

import (
	"path/filepath"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// The wrapper keeps what the store reads in bulk or in one read, so chaos
// runs the restore and rebuild paths tether up runs, and still records
// every node status write.
func TestWrapStoreKeepsReads(t *testing.T) {
	b, err := store.CreateBolt(filepath.Join(t.TempDir(), "tether.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for _, tc := range []struct {
		name         string
		st           store.Store
		bulk, onevol bool
	}{
		{"bolt", b, true, true},
		{"memory", store.NewMemory(), true, false},
		{"neither", struct{ store.Store }{store.NewMemory()}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Checker{}
			w := c.WrapStore(tc.st)
			_, tables := w.(store.TableReader)
			_, intents := w.(store.BulkIntents)
			_, onevol := w.(store.VolumeReader)
			if tables != tc.bulk || intents != tc.bulk || onevol != tc.onevol {
				t.Fatalf("wrapped: TableReader %v, BulkIntents %v, VolumeReader %v; want %v, %v, %v", tables, intents, onevol, tc.bulk, tc.bulk, tc.onevol)
			}
			if err := w.PutNode(store.NodeSpec{Name: "n1"}); err != nil {
				t.Fatal(err)
			}
			if err := w.PutNodeStatus(nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/xvdb"}}); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			recorded := c.seq
			c.mu.Unlock()
			if recorded != 1 {
				t.Fatalf("%d records after one status write, want 1", recorded)
			}
			if tc.bulk {
				tb, err := w.(store.TableReader).ReadTables()
				if err != nil || len(tb.Statuses) != 1 || tb.Statuses[0].VolumesAttached["v1"] != "/dev/xvdb" {
					t.Fatalf("ReadTables through the wrapper: %+v, %v", tb, err)
				}
			}
			if tc.onevol {
				r, err := w.(store.VolumeReader).ReadVolume("v1")
				if err != nil || len(r.Statuses) != 1 {
					t.Fatalf("ReadVolume through the wrapper: %+v, %v", r, err)
				}
			}
		})
	}
}
