package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// Syncs counts two syncs per committed write transaction: one Apply is
// one transaction, and concurrent node statuses share transactions.
func TestBoltSyncs(t *testing.T) {
	b, err := CreateBolt(filepath.Join(t.TempDir(), "tether.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	start := b.Syncs()
	if err := b.Apply([]Op{{PutNode: &NodeSpec{Name: "n1"}}, {PutNode: &NodeSpec{Name: "n2"}}}); err != nil {
		t.Fatal(err)
	}
	if got := b.Syncs() - start; got != 2 {
		t.Fatalf("one Apply of two ops made %d syncs, want 2", got)
	}
	if _, _, err := b.Node("n1"); err != nil { // reads sync nothing
		t.Fatal(err)
	}
	if got := b.Syncs() - start; got != 2 {
		t.Fatalf("a read changed the sync count to %d", got)
	}
	const writers = 64
	mark := b.Syncs()
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := nodestatus.Status{Name: cloud.NodeName(fmt.Sprintf("n%d", i))}
			if err := b.PutNodeStatus(st); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := b.Syncs() - mark
	if got < 2 || got%2 != 0 || got > 2*writers {
		t.Fatalf("%d concurrent status writes made %d syncs, want an even number in [2, %d]", writers, got, 2*writers)
	}
	t.Logf("%d concurrent status writes: %d syncs", writers, got)
}
