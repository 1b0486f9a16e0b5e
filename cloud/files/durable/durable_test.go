package durable

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile replaces the file with its mode and leaves no temporary file;
// a write into a missing directory fails and creates nothing.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"one", "two, longer"} {
		if err := WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode %v, %v; want 0640", fi.Mode().Perm(), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d entries in the directory, want only the file", len(ents))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("syncing a missing directory succeeded")
	}
}

// Replace says whether it renamed; RemoveStaleTemps removes the temporary
// files of the file it names (a killed WriteFile's), and nothing else.
func TestReplaceAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if renamed, err := Replace(path, []byte("x"), 0o600); !renamed || err != nil {
		t.Fatalf("Replace: renamed %v, %v", renamed, err)
	}
	if renamed, err := Replace(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); renamed || err == nil {
		t.Fatalf("Replace into a missing directory: renamed %v, %v", renamed, err)
	}
	stale := filepath.Join(dir, TempPrefix("state.json")+"123")
	others := []string{filepath.Join(dir, TempPrefix("other.json")+"123"), filepath.Join(dir, "state.json.tmp-123")}
	for _, p := range append([]string{stale}, others...) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	RemoveStaleTemps(path)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file kept: %v", err)
	}
	for _, p := range append(others, path) {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s removed: %v", p, err)
		}
	}
}
