package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/node/layout"
)

// tree is a node's data directory held open: the root, pods/ and each
// plugin's mounts/ (the directories the mounters never remove), each an
// O_PATH descriptor found a real directory below the root by openat2(2)
// with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS when it was opened. The
// symlink and bind mounters work relative to them (mkdirat, symlinkat,
// unlinkat, openat2 of what lies below), so that a stage or an unstage
// costs no walk of the path and no check of a directory checked before.
//
// Where a directory held open is removed (CleanEmptyParents up to the
// root, a test, an operator), an operation relative to it fails with
// ENOENT; the tree then asks the kernel whether the directory is still
// linked in (fstat: its link count) and, if not, forgets every directory
// it holds and opens them again. A directory renamed while held open is
// a concurrent writer to the data directory: outside the package's
// threat model, as it is for the path-by-path checks.
//
// Descriptors are closed by the os.File that holds each (Close when
// forgotten, its finalizer when the mounter is garbage); every use runs
// inside the file's Control, which keeps the descriptor from being
// closed (and its number reused) while in use. The process holds at most
// a budget of them (see budget); beyond it a tree opens per operation.
type tree struct {
	l layout.Layout

	mu    sync.Mutex
	dirs  map[string]*os.File // "" (the root), "pods", "plugins/<p>/mounts"
	count *heldCount          // len(dirs), for the budget when t is garbage
}

// heldCount is how many descriptors one tree holds, apart from the tree
// so that a cleanup can give them back to the budget once it is garbage
// (the files' own finalizers close them).
type heldCount struct{ n atomic.Int64 }

// budget bounds the descriptors every tree of the process holds
// together: a quarter of the open-file limit (which Go raises to the hard
// limit at start), so that a process running thousands of agents
// (tether bench) leaves the rest to its store and its connections.
// Beyond it, a tree opens what it needs per operation and closes it
// after (two to four system calls more each).
var budget struct {
	once sync.Once
	max  int64
	n    atomic.Int64
}

// budgetMax is the budget's limit, read once.
func budgetMax(op *opc) int64 {
	budget.once.Do(func() {
		var rl unix.Rlimit
		op.add(callRlimit)
		budget.max = 256
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
			budget.max = int64(min(rl.Cur/4, 1<<20))
		}
	})
	return budget.max
}

// budgetSpent reports whether the budget has no descriptor left.
func budgetSpent(op *opc) bool { return budget.n.Load() >= budgetMax(op) }

// takeFD reserves one descriptor of the budget.
func takeFD(op *opc) bool {
	if budget.n.Add(1) > budgetMax(op) {
		budget.n.Add(-1)
		return false
	}
	return true
}

// maxHeld bounds the directories a tree holds open: the root, pods/ and
// a few plugins' mounts/. Others are opened per operation.
const maxHeld = 8

func newTree(l layout.Layout) *tree {
	t := &tree{l: l, dirs: map[string]*os.File{}, count: &heldCount{}}
	runtime.AddCleanup(t, func(c *heldCount) { budget.n.Add(-c.n.Load()) }, t.count)
	return t
}

// on reports whether the fast path may run.
func (t *tree) on() bool { return t != nil && !noOpenat2.Load() && !legacyOnly.Load() }

// spot is where a checked target lies: below the held directory base
// ("", "pods" or "plugins/<p>/mounts"), in its subdirectory sub ("" for
// base itself), named name.
type spot struct {
	base, sub, name string
}

// spotOf splits a target checkTarget accepted (clean, strictly below the
// root).
func (t *tree) spotOf(target string) spot {
	rel := target[len(t.l.Root())+1:]
	dir, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	parts := strings.Split(dir, "/")
	switch {
	case dir == layout.PodsDir:
		return spot{base: layout.PodsDir, name: name}
	case parts[0] == layout.PodsDir:
		return spot{base: layout.PodsDir, sub: dir[len(layout.PodsDir)+1:], name: name}
	case len(parts) == 3 && parts[0] == layout.PluginsDir && parts[2] == layout.MountsDir:
		return spot{base: dir, name: name}
	}
	return spot{sub: dir, name: name}
}

// podDirs reports whether s is a workload's volume path of the layout,
// pods/<uid>/volumes/<plugin>/<volume>: its parents up to pods/<uid> are
// the workload's own, removed once empty (see removePod).
func (s spot) podDirs() bool {
	parts := strings.Split(s.sub, "/")
	return s.base == layout.PodsDir && len(parts) == 3 && parts[1] == layout.VolumesDir
}

// held returns the directory base, opening it if the tree does not hold
// it (making it and the root first when create; a missing one otherwise
// wraps fs.ErrNotExist). release must be called when done with it: it
// closes what the tree could not keep (see budget).
func (t *tree) held(op *opc, base string, create bool) (f *os.File, release func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for range 2 {
		if f := t.dirs[base]; f != nil {
			return f, func() {}, nil
		}
		root, fresh := t.dirs[""], false
		if root == nil && base != "" && budgetSpent(op) {
			if f := t.direct(op, base); f != nil {
				return f, t.keep(op, base, f, true), nil
			}
		}
		if root == nil {
			if root, err = t.openRoot(op, create); err != nil {
				return nil, nil, err
			}
			fresh = true
		}
		closeRoot := t.keep(op, "", root, fresh)
		if base == "" {
			return root, closeRoot, nil
		}
		err = use(root, func(rfd int) error {
			fd, err := openBelow(op, rfd, base, create)
			if err == nil {
				f = os.NewFile(uintptr(fd), t.l.Root()+"/"+base)
			}
			return err
		})
		if errors.Is(err, fs.ErrNotExist) && !fresh && t.unlinked(op, root) {
			t.forget(op) // the root was removed: open it again
			continue
		}
		closeRoot()
		if err != nil {
			return nil, nil, err
		}
		return f, t.keep(op, base, f, true), nil
	}
	return nil, nil, err
}

// direct opens base by its absolute path, refusing symlinks all along
// (RESOLVE_NO_SYMLINKS), for a tree that cannot hold the root (the budget
// is spent): one openat2 rather than the root's open and close and an
// openat2 below it. nil where it fails, for whatever reason (base
// missing, a symlink above the root, which is allowed): the caller then
// walks from the root, which tells those apart.
func (t *tree) direct(op *opc, base string) *os.File {
	if !procFD(op) {
		return nil
	}
	fd, err := openat2How(op, unix.AT_FDCWD, t.l.Root()+"/"+base, unix.RESOLVE_NO_SYMLINKS)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), t.l.Root()+"/"+base)
}

// keep holds f as dirs[key] if it is new (fresh) and the tree and the
// budget allow one more; it returns what closes f when the caller is done
// with it (nothing, when kept). t.mu must be held.
func (t *tree) keep(op *opc, key string, f *os.File, fresh bool) (release func()) {
	if !fresh {
		return func() {}
	}
	if len(t.dirs) < maxHeld && takeFD(op) {
		t.dirs[key] = f
		t.count.n.Add(1)
		return func() {}
	}
	return func() { op.add(callClose); f.Close() }
}

// openRoot opens the data directory, through symlinks above it (allowed),
// making it first (mkdirAll) when create. It checks once per process that
// /proc/self/fd names descriptors (the bind mounter mounts through it).
func (t *tree) openRoot(op *opc, create bool) (*os.File, error) {
	if !procFD(op) {
		return nil, errNoTree
	}
	for range 2 {
		op.add(callOpen)
		fd, err := unix.Open(t.l.Root(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), t.l.Root()), nil
		}
		if err != unix.ENOENT || !create {
			return nil, &fs.PathError{Op: "open", Path: t.l.Root(), Err: err}
		}
		if err := op.mkdirAll(t.l.Root()); err != nil {
			return nil, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: t.l.Root(), Err: unix.ENOENT}
}

var (
	procOnce sync.Once
	procOK   bool
)

// procFD reports whether /proc/self/fd is there: the bind mounter names
// its targets /proc/self/fd/<dir>/<name>, so that mount(2) and umount2(2)
// reach the directory held open, not whatever a path names by then.
func procFD(op *opc) bool {
	procOnce.Do(func() {
		fi, err := op.stat("/proc/self/fd")
		procOK = err == nil && fi.IsDir()
	})
	return procOK
}

// openBelow opens rel below the directory dirfd, refusing a symlink or
// a non-directory on the way (ErrOutside), and making what is missing
// when create.
func openBelow(op *opc, dirfd int, rel string, create bool) (int, error) {
	fd, err := openat2(op, dirfd, rel)
	if err != unix.ENOENT || !create {
		return fd, pathErr(rel, err)
	}
	a, err := makeDirs(op, dirfd, rel)
	if err != nil {
		return -1, err
	}
	if a.pre == "" {
		return a.fd, nil
	}
	fd, err = openat2(op, a.fd, a.pre)
	a.close(op)
	return fd, pathErr(rel, err)
}

// openat2 opens rel below dirfd as an O_PATH directory descriptor,
// refusing symlinks (ELOOP) and escapes (EXDEV) anywhere on the way.
func openat2(op *opc, dirfd int, rel string) (int, error) {
	return openat2How(op, dirfd, rel, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_SYMLINKS)
}

// openat2How is openat2 with the resolve flags given.
func openat2How(op *opc, dirfd int, path string, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve}
	for {
		op.add(callOpenat2)
		fd, err := unix.Openat2(dirfd, path, &how)
		switch err {
		case unix.EINTR, unix.EAGAIN:
			continue
		case unix.ENOSYS, unix.EPERM:
			noOpenat2.Store(true)
			return -1, errNoTree
		}
		return fd, err
	}
}

// pathErr classifies an error of openat2: a symlink (ELOOP), an escape
// (EXDEV) or a file (ENOTDIR) on the way is ErrOutside; ENOENT stays
// fs.ErrNotExist.
func pathErr(rel string, err error) error {
	switch {
	case err == nil, errors.Is(err, errNoTree):
		return err
	case err == unix.ELOOP, err == unix.EXDEV, err == unix.ENOTDIR:
		return fmt.Errorf("mount: %s: a symlink or a file on the way (%w): %w", rel, err, ErrOutside)
	}
	return &fs.PathError{Op: "openat2", Path: rel, Err: err}
}

// use runs fn with f's descriptor, which cannot be closed meanwhile. A
// file closed already (forgotten by the tree) is ENOENT: the caller asks
// the tree again.
func use(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return unix.ENOENT
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return unix.ENOENT
	}
	return ferr
}

// stale reports whether the directory f, held or opened by held, is no
// longer linked in (its link count is 0, or f was closed meanwhile), and
// then forgets every directory the tree holds: the next operation opens
// them again.
func (t *tree) stale(op *opc, f *os.File) bool {
	if !t.unlinked(op, f) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.dirs {
		if d == f { // else forgotten already, by another operation
			t.forget(op)
			break
		}
	}
	return true
}

// unlinked reports whether f's directory was removed (or f closed).
func (t *tree) unlinked(op *opc, f *os.File) bool {
	var st unix.Stat_t
	op.add(callStat)
	err := use(f, func(fd int) error { return unix.Fstat(fd, &st) })
	return err != nil || st.Nlink == 0
}

// forget closes every directory held; t.mu must be held.
func (t *tree) forget(op *opc) {
	for k, d := range t.dirs {
		op.add(callClose)
		d.Close() // a user in Control keeps the descriptor until it is done
		delete(t.dirs, k)
		t.count.n.Add(-1)
		budget.n.Add(-1)
	}
}

// errAbsent: the target (or a directory above it) is missing, which an
// unmount takes as done, once the tree made sure the directory it looked
// in is still linked in.
var errAbsent = fmt.Errorf("mount: absent: %w", fs.ErrNotExist)

// run runs fn in the directory base (made when create) with the held
// descriptor, again (at most attempts times) while it fails with ENOENT
// and either the held directory was removed (the tree opens it again) or
// retry says the error may be a race. A missing base when !create is
// fs.ErrNotExist.
func (t *tree) run(op *opc, base string, create bool, retry func(error) bool, fn func(basefd int) error) error {
	var err error
	for range attempts {
		f, release, herr := t.held(op, base, create)
		if herr != nil {
			return herr
		}
		err = use(f, fn)
		again := (errors.Is(err, unix.ENOENT) || errors.Is(err, fs.ErrNotExist)) && (t.stale(op, f) || retry(err))
		release() // after stale: f may be the tree's to close
		if !again {
			return err
		}
	}
	return err
}
