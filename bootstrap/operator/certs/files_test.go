package certs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile without replace refuses a key that exists (ErrExists, naming
// it), leaves it intact and leaves no temporary file; with replace it
// replaces it, mode included.
func TestWriteFileNoReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CAKeyFile)
	if err := WriteFile(path, []byte("first"), 0o600, false); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("second"), 0o600, false)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), path) {
		t.Fatalf("WriteFile over an existing key: %v, want ErrExists naming it", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first" {
		t.Fatalf("refused write left %q, want the first key", got)
	}
	if err := WriteFile(path, []byte("forced"), 0o640, true); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "forced" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("replaced key holds %q mode %v, want forced 0640", got, fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d entries in the directory, want only the key (no temporary file)", len(ents))
	}
}
