package node

import (
	"errors"
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

// A loop device being unbound while its backing_file is read answers
// ENODEV or ENXIO: not bound, like a device whose file is gone; anything
// else is an error.
func TestUnboundLoopReads(t *testing.T) {
	for err, want := range map[error]bool{
		&fs.PathError{Op: "open", Path: "backing_file", Err: unix.ENOENT}: true,
		&fs.PathError{Op: "read", Path: "backing_file", Err: unix.ENODEV}: true,
		&fs.PathError{Op: "read", Path: "backing_file", Err: unix.ENXIO}:  true,
		&fs.PathError{Op: "open", Path: "backing_file", Err: unix.EACCES}: false,
		errors.New("other"): false,
	} {
		if got := unbound(err); got != want {
			t.Errorf("unbound(%v) = %v, want %v", err, got, want)
		}
	}
}
