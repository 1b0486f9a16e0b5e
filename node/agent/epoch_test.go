package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/node/layout"
)

// nextEpoch counts starts across calls (as across restarts), leaves only
// its file behind, and refuses a corrupt file, naming it. That it writes
// through cloud/files/durable (and so syncs the directory) is checked by
// durable's TestOneDurableWriter, which caught the writer it had.
func TestNextEpoch(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	l, err := layout.New(root)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(1); want <= 3; want++ {
		got, err := nextEpoch(l)
		if err != nil || got != want {
			t.Fatalf("nextEpoch = %d, %v; want %d", got, err, want)
		}
	}
	ents, err := os.ReadDir(root)
	if err != nil || len(ents) != 1 || ents[0].Name() != epochFile {
		t.Fatalf("data directory holds %v (%v), want only %s", ents, err, epochFile)
	}
	path := filepath.Join(root, epochFile)
	if err := os.WriteFile(path, []byte("xyz"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := nextEpoch(l); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("nextEpoch over a corrupt file: %v, want an error naming it corrupt", err)
	}
}
