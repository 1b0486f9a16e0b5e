package mount

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2(2) answers ENOSYS (a kernel older than
// 5.6) or EPERM (a seccomp filter that does not know it): realDirs then
// answers "cannot tell" without asking again.
var noOpenat2 atomic.Bool

// realDirs reports whether dir is an existing directory that path
// resolution reaches through directories alone, with no symlink anywhere
// on the way (above the data directory too): one openat2(2) with
// RESOLVE_NO_SYMLINKS and a close, where checking each directory between
// the root and a target costs an lstat each (three or four for the
// layout's targets, each walking the whole path again). false means it
// cannot tell: a symlink on the way (a data directory below one is
// allowed), something missing or not a directory, or no openat2; the
// caller then walks the directories one by one, which tells those apart.
func realDirs(op *opc, dir string) bool {
	if noOpenat2.Load() {
		return false
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	op.add(callOpenat2)
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
	switch err {
	case nil:
		op.add(callClose)
		unix.Close(fd)
		return true
	case unix.ENOSYS, unix.EPERM:
		noOpenat2.Store(true)
	}
	return false // EINTR or EAGAIN too: the walk asks again, no loop here
}
