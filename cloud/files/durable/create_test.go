package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Create refuses anything already at path (a file, a directory, a
// dangling symlink), leaves it as it was, and leaves no temporary file.
func TestCreateRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(file, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, sub, dangling} {
		if err := Create(path, []byte("new"), 0o644); !errors.Is(err, fs.ErrExist) {
			t.Errorf("Create(%s) = %v, want an error matching fs.ErrExist", path, err)
		}
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "old" {
		t.Fatalf("existing file now %q, %v; want it intact", got, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Fatalf("Create wrote through a dangling symlink: %v", err)
	}
	assertEntries(t, dir, "dangling", "key.pem", "sub")
}

// A file that appears between Create's check and its link is not
// replaced either: the link itself refuses it.
func TestCreateRacingFileKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.pem")
	err := CreateFrom(path, 0o600, func(f *os.File) error {
		if err := os.WriteFile(path, []byte("theirs"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := f.Write([]byte("ours"))
		return err
	})
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateFrom over a file made meanwhile: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "theirs" {
		t.Fatalf("the file made meanwhile now holds %q", got)
	}
	assertEntries(t, dir, "ca.pem")
}

// Create writes a new file whole, with its mode, and leaves no temporary
// file; a failing fill creates nothing.
func TestCreateWritesNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := Create(path, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "secret\n" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	boom := errors.New("boom")
	if err := CreateFrom(filepath.Join(dir, "other"), 0o600, func(*os.File) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("CreateFrom with a failing fill: %v", err)
	}
	assertEntries(t, dir, "token")
}

// Every writer fsyncs the directory it renamed or linked in, after the
// rename or link; a failed directory sync is reported, not swallowed.
func TestDirectorySynced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var synced []string
	var failWith error
	orig := syncDir
	t.Cleanup(func() { syncDir = orig })
	syncDir = func(d string) error {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("directory synced before the file was in place: %v", err)
		}
		synced = append(synced, d)
		return failWith
	}
	writers := []struct {
		name  string
		write func() error
	}{
		{"WriteFile", func() error { return WriteFile(path, []byte("x"), 0o600) }},
		{"Replace", func() error { _, err := Replace(path, []byte("y"), 0o600); return err }},
		{"Create", func() error { return Create(path, []byte("z"), 0o600) }},
	}
	for _, w := range writers {
		_ = os.Remove(path)
		synced, failWith = nil, nil
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if !slices.Equal(synced, []string{dir}) {
			t.Errorf("%s synced directories %q, want [%s]", w.name, synced, dir)
		}
		_ = os.Remove(path)
		synced, failWith = nil, errors.New("disk gone")
		if err := w.write(); err == nil {
			t.Errorf("%s: a failed directory sync was not reported", w.name)
		}
	}
}

// assertEntries fails unless dir holds exactly want (sorted names).
func assertEntries(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s holds %q, want %q (no temporary file left)", dir, got, want)
	}
}

func writeFixture(path, src string) error { return os.WriteFile(path, []byte(src), 0o600) }
