package loop

import (
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

// A device unbound while sysfs is read (another process's, torn down at
// that moment) answers ENODEV or ENXIO: not bound, not an error that would
// fail a create or a reconcile (seen in CI: "read /sys/block/loop1/loop/
// backing_file: no such device").
func TestSysfsBackingOfADeviceGoingAway(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   string
		err   error
		want  string
		bound bool
		fails bool
	}{
		{"bound", "/data/a.img\n", nil, "/data/a.img\n", true, false},
		{"never bound", "", &fs.PathError{Op: "open", Path: "backing_file", Err: unix.ENOENT}, "", false, false},
		{"being unbound", "", &fs.PathError{Op: "read", Path: "backing_file", Err: unix.ENODEV}, "", false, false},
		{"gone", "", &fs.PathError{Op: "read", Path: "backing_file", Err: unix.ENXIO}, "", false, false},
		{"unreadable", "", &fs.PathError{Op: "open", Path: "backing_file", Err: unix.EACCES}, "", false, true},
	} {
		got, bound, err := sysfsBacking([]byte(tc.raw), tc.err)
		if got != tc.want || bound != tc.bound || (err != nil) != tc.fails {
			t.Errorf("%s: %q, %v, %v; want %q, %v, error %v", tc.name, got, bound, err, tc.want, tc.bound, tc.fails)
		}
	}
}
