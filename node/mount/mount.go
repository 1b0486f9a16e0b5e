package mount

import (
	"errors"
	"fmt"
)

// State is what Inspect finds at a target.
type State int

const (
	// Absent: nothing at the target path.
	Absent State = iota
	// Mounted: the target shows a source's content.
	Mounted
	// Partial: the path exists but is not a working mount (an operation was
	// interrupted, or the source went away). Repeating the operation, or
	// undoing it, repairs it.
	Partial
	// Unknown: Inspect did not answer in time (ScanContext only; a hung
	// mount, typically). The target may be anything; treat it as Partial.
	Unknown
)

func (s State) String() string {
	switch s {
	case Absent:
		return "absent"
	case Mounted:
		return "mounted"
	case Partial:
		return "partial"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Errors wrapped by Mounter methods, for callers that classify.
var (
	// ErrOutside: the target is not strictly below the layout's root, or a
	// directory between the root and the target is a symlink. Nothing was
	// touched.
	ErrOutside = errors.New("mount: target outside the data directory")
	// ErrConflict: the target already shows another source.
	ErrConflict = errors.New("mount: target shows another source")
	// ErrNotEmpty: the target is a directory holding data that is not a
	// mount; it is left alone rather than hidden or deleted.
	ErrNotEmpty = errors.New("mount: target holds data")
)

// Mounter makes a source directory available at a target path. Every method
// is idempotent (I7): repeating it after a crash is harmless, and repeating
// an interrupted operation completes it. Targets must be strictly below the
// layout root (otherwise ErrOutside, touching nothing); the target's
// parents are created as needed (0750). Sources are directories given by
// absolute (or cwd-relative) paths, anywhere, but never a symlink: a
// source that is one is refused (ErrUnsafeSource) and nothing is mounted
// (the symlink mounter's Publish excepted: its stage is a symlink; and the
// block mounter's Stage, whose source is a block device, see NewBlock).
type Mounter interface {
	// Stage makes target show source's content. Already staged from the
	// same source (the same directory): nil. Showing another source:
	// ErrConflict.
	Stage(source, target string) error
	// Unstage removes the mount and the target path, not its parents
	// (a plugin's mounts/ stays); absent: nil.
	Unstage(target string) error
	// Publish makes target show staged's content, read-only if asked where
	// the implementation can enforce it. Repeating it with another readOnly
	// changes the mode. Showing another source: ErrConflict.
	Publish(staged, target string, readOnly bool) error
	// Unpublish removes the mount and the target path; absent: nil. For
	// a workload's volume path of the layout,
	// pods/<uid>/volumes/<plugin>/<volume>, it then removes the
	// workload's directories once empty (<plugin>, volumes, <uid>, the
	// first that holds anything and those above it stay; pods/ always
	// stays), also when the target was absent already (an unpublish
	// interrupted after removing it). Other targets' parents stay.
	Unpublish(target string) error
	// Inspect reports the target's state and, when Mounted, the source it
	// shows.
	Inspect(target string) (State, string, error)
	// Name is "symlink", "bind" or "block".
	Name() string
}
