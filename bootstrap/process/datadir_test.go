package process

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// A data directory that group or others may write in is refused before
// anything is read or written there, with the chmod that fixes it; after
// the chmod it starts.
func TestDataDirWritableByOthersRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o707, 0o777} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := startDurable(t, dir, false)
		want := fmt.Sprintf("data directory %s is writable by group or others (mode %04o): it holds the API's address and token, which clients trust; fix it with: chmod go-w %s", dir, mode, dir)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("start on a directory of mode %04o: %v; want %q", mode, err, want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("the refused start wrote %d files, first %s", len(ents), ents[0].Name())
		}
	}
	dir := t.TempDir()
	cleanupMounts(t, dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := startDurable(t, dir, false)
	if err != nil {
		t.Fatalf("start on a directory of mode 0755: %v", err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
}
