package loopsys

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A device unbound while sysfs is read (another process's, torn down at
// that moment) answers ENODEV or ENXIO: not bound, not an error that would
// fail a create, a reconcile or a stage (seen in CI: "read
// /sys/block/loop1/loop/backing_file: no such device"); anything else is
// an error.
func TestBackingOfADeviceGoingAway(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   string
		err   error
		want  string
		bound bool
		fails bool
	}{
		{"bound", "/data/a.img\n", nil, "/data/a.img\n", true, false},
		{"never bound", "", &fs.PathError{Op: "open", Path: "backing_file", Err: syscall.ENOENT}, "", false, false},
		{"being unbound", "", &fs.PathError{Op: "read", Path: "backing_file", Err: syscall.ENODEV}, "", false, false},
		{"gone", "", &fs.PathError{Op: "read", Path: "backing_file", Err: syscall.ENXIO}, "", false, false},
		{"unreadable", "", &fs.PathError{Op: "open", Path: "backing_file", Err: syscall.EACCES}, "", false, true},
		{"other", "", errors.New("other"), "", false, true},
	} {
		got, bound, err := Backing([]byte(tc.raw), tc.err)
		if got != tc.want || bound != tc.bound || (err != nil) != tc.fails {
			t.Errorf("%s: %q, %v, %v; want %q, %v, error %v", tc.name, got, bound, err, tc.want, tc.bound, tc.fails)
		}
	}
}

// ReadBacking reads the file as it is, and a missing one is not bound.
func TestReadBacking(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backing_file")
	if got, bound, err := ReadBacking(path); got != "" || bound || err != nil {
		t.Errorf("missing file: %q, %v, %v; want not bound", got, bound, err)
	}
	if err := os.WriteFile(path, []byte("/data/a.img (deleted)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, bound, err := ReadBacking(path); got != "/data/a.img (deleted)\n" || !bound || err != nil {
		t.Errorf("bound: %q, %v, %v; want the file's bytes", got, bound, err)
	}
}
