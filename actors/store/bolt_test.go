package store

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

func TestBoltSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := CreateBolt(path)
	must(t, err)
	must(t, b.Apply([]Op{
		{PutVolume: &VolumeSpec{ID: "v1", Mode: cloud.MultiNode}},
		{PutVolume: &VolumeSpec{ID: "v2", Mode: cloud.MultiNode, ReadOnly: true}},
		{PutNode: &NodeSpec{Name: "n1"}},
		{PutWorkload: &Workload{UID: "a", Node: "n1", Volumes: []cloud.VolumeID{"v1"}, ReadOnly: []cloud.VolumeID{"v1"}}},
		{PutWorkload: &Workload{UID: "b", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
	}))
	must(t, b.DeleteWorkload("a"))
	must(t, b.PutNodeStatus(nodestatus.Status{Name: "n1", Ready: true,
		VolumesAttached:  map[cloud.VolumeID]string{"v1": "/dev/a"},
		VolumesDetaching: map[cloud.VolumeID]bool{"v2": true},
		NotReadySince:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}))
	before := snap(t, b)
	must(t, b.Close())

	b = openBolt(t, path)
	if after := snap(t, b); !reflect.DeepEqual(after, before) {
		t.Fatalf("reopened store differs:\n before %+v\n after  %+v", before, after)
	}
	// The counters survive too: the next workload's Seq follows the last one.
	must(t, b.PutWorkload(Workload{UID: "c", Node: "n1"}))
	if c, _, _ := b.Workload("c"); c.Seq != 3 {
		t.Fatalf("Seq after reopen = %d, want 3", c.Seq)
	}
	if rev, _ := b.Revision(); rev != before.Rev+1 {
		t.Fatalf("Revision after reopen = %d, want %d", rev, before.Rev+1)
	}
}

// TestBoltSecondOpenFails: a second opener is told, within the lock timeout,
// that the store is taken. flock conflicts between two opens of one file in
// one process just as between two processes.
func TestBoltSecondOpenFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	first, err := CreateBolt(path)
	must(t, err)

	type result struct {
		b   *Bolt
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		b, err := OpenBolt(path)
		done <- result{b, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("second OpenBolt still waiting after 10 s")
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("second OpenBolt took %v, want about the 1 s lock timeout", elapsed)
	}
	if r.err == nil {
		_ = r.b.Close()
		t.Fatal("second OpenBolt succeeded while the first holds the file")
	}
	if want := "store: " + path + " is in use by another process"; !errors.Is(r.err, ErrInUse) || r.err.Error() != want {
		t.Fatalf("err = %q, want %q matching ErrInUse", r.err, want)
	}

	must(t, first.Close())
	openBolt(t, path) // free again
}

func TestBoltFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	openBolt(t, path)
	fi, err := os.Stat(path)
	must(t, err)
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Fatalf("file mode = %v, want 0600", got)
	}
}

func TestBoltNeedsParentDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if b, err := CreateBolt(filepath.Join(dir, "store.db")); err == nil {
		_ = b.Close()
		t.Fatal("CreateBolt created a missing parent directory")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("parent dir: %v, want it still missing", err)
	}
}
