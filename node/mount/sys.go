package mount

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// The system calls of the mounters are counted, per operation: every call
// goes through a method of the operation's opc (below), which adds one to
// the operation's own tally; when the operation ends, the tally is added to
// the process's totals (atomic counters, one per operation and kind of
// call). Syscalls reads them, so that a test or tether bench can tell how
// many calls a stage, a publish, an unpublish or an unstage costs.
//
// Not counted: reads of the mount table (/proc/self/mountinfo), which
// are shared among the callers that ask at the same time and so belong to
// no one operation (the fast paths never read it), and the runtime's own
// calls (an EINTR retry is counted once).

// Op names an operation whose system calls are counted.
type Op int

// Operations counted. Stage, Publish, Unpublish and Unstage are the
// Mounter methods (the symlink, bind and block mounters); Inspect is
// Mounter.Inspect; Clean is CleanEmptyParents; Prepare is MakeParents.
const (
	OpStage Op = iota
	OpPublish
	OpUnpublish
	OpUnstage
	OpInspect
	OpClean
	OpPrepare
	numOps
)

var opNames = [numOps]string{"stage", "publish", "unpublish", "unstage", "inspect", "clean", "prepare"}

func (o Op) String() string { return opNames[o] }

// call is a kind of system call.
type call int

const (
	callLstat    call = iota // fstatat(2) not following the last symlink
	callStat                 // fstatat(2) or fstat(2)
	callStatx                // statx(2)
	callStatfs               // statfs(2)
	callReadlink             // readlinkat(2)
	callOpen                 // openat(2)
	callOpenat2              // openat2(2)
	callClose                // close(2)
	callGetdents             // getdents64(2)
	callMkdir                // mkdirat(2)
	callSymlink              // symlinkat(2)
	callUnlink               // unlinkat(2) of a file or symlink
	callRmdir                // unlinkat(2) with AT_REMOVEDIR
	callMount                // mount(2)
	callUmount               // umount2(2)
	callRlimit               // prlimit64(2), once per process
	numCalls
)

var callNames = [numCalls]string{"lstat", "stat", "statx", "statfs", "readlink", "open", "openat2", "close", "getdents", "mkdir", "symlink", "unlink", "rmdir", "mount", "umount", "getrlimit"}

// legacyOnly makes the mounters use the path-by-path code (checkParents,
// realDirs, absolute paths), as on a kernel without openat2(2) or an OS
// other than Linux: for tests and benchmarks that compare the two.
var legacyOnly atomic.Bool

// errNoTree: the fast path (see tree) cannot run here: no openat2, no
// /proc, not Linux, or legacyOnly. The caller falls back to the
// path-by-path code; nothing was touched.
var errNoTree = errors.New("mount: no openat2")

// attempts bounds the tries of an operation whose directories were
// removed under it (by another volume's unpublish, or a held directory
// removed: see tree).
const attempts = 8

// totals are the process's counters: operations run, and calls by kind.
var totals [numOps]struct {
	ops   atomic.Int64
	calls [numCalls]atomic.Int64
}

// opc is one running operation: its name in errors (String, so that it
// reads as the op strings it replaces) and its tally. Methods of a nil
// opc count nothing.
type opc struct {
	name string
	op   Op
	n    [numCalls]uint32
}

func newOp(op Op) *opc { return &opc{name: op.String(), op: op} }

// newOpNamed is newOp with another name in errors.
func newOpNamed(op Op, name string) *opc { return &opc{name: name, op: op} }

func (o *opc) String() string {
	if o == nil {
		return "operation"
	}
	return o.name
}

func (o *opc) add(c call) {
	if o != nil {
		o.n[c]++
	}
}

// done adds the tally to the totals; the operation is counted once.
func (o *opc) done() {
	t := &totals[o.op]
	t.ops.Add(1)
	for c, n := range o.n {
		if n > 0 {
			t.calls[c].Add(int64(n))
		}
	}
}

// OpCalls is what the operations of one kind cost so far: how many ran
// and their system calls, by kind ("mkdir", "symlink", ...).
type OpCalls struct {
	Ops   int64
	Calls map[string]int64
}

// Total is the number of system calls.
func (c OpCalls) Total() int64 {
	var n int64
	for _, v := range c.Calls {
		n += v
	}
	return n
}

// PerOp is Total over Ops (0 without operations).
func (c OpCalls) PerOp() float64 {
	if c.Ops == 0 {
		return 0
	}
	return float64(c.Total()) / float64(c.Ops)
}

// Syscalls returns the counts of every operation the mounters of this
// process ran, by Op name ("stage", "publish", ...). Counters only grow:
// subtract an earlier reading (Since) to measure a stretch of work; work
// of other goroutines meanwhile is included.
func Syscalls() map[string]OpCalls {
	out := make(map[string]OpCalls, numOps)
	for op := range numOps {
		c := OpCalls{Ops: totals[op].ops.Load(), Calls: map[string]int64{}}
		for k := range numCalls {
			if n := totals[op].calls[k].Load(); n > 0 {
				c.Calls[callNames[k]] = n
			}
		}
		out[op.String()] = c
	}
	return out
}

// SyscallsSince is Syscalls less an earlier reading of it.
func SyscallsSince(before map[string]OpCalls) map[string]OpCalls {
	now := Syscalls()
	for name, c := range now {
		b := before[name]
		c.Ops -= b.Ops
		for k, v := range b.Calls {
			if c.Calls[k] -= v; c.Calls[k] == 0 {
				delete(c.Calls, k)
			}
		}
		now[name] = c
	}
	return now
}

// The path-by-path calls, counted. Each is one system call (EINTR
// retries aside) unless its comment says otherwise.

func (o *opc) lstat(path string) (fs.FileInfo, error) {
	o.add(callLstat)
	return os.Lstat(path)
}

func (o *opc) stat(path string) (fs.FileInfo, error) {
	o.add(callStat)
	return os.Stat(path)
}

// readlink is one readlinkat(2) for a destination shorter than 128
// bytes (os.Readlink grows its buffer and asks again otherwise).
func (o *opc) readlink(path string) (string, error) {
	o.add(callReadlink)
	return os.Readlink(path)
}

func (o *opc) mkdir(path string) error {
	o.add(callMkdir)
	return os.Mkdir(path, dirMode)
}

// mkdirAll is os.MkdirAll (dirMode), counted: a stat, and for a missing
// directory its parent's mkdirAll and a mkdir.
func (o *opc) mkdirAll(dir string) error {
	fi, err := o.stat(dir)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := o.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := o.mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

func (o *opc) symlink(dest, path string) error {
	o.add(callSymlink)
	return os.Symlink(dest, path)
}

// unlink removes a file or symlink, never a directory.
func (o *opc) unlink(path string) error {
	o.add(callUnlink)
	return ignoringEINTR(func() error { return syscall.Unlink(path) }, "remove", path)
}

// rmdir removes the empty directory dir with rmdir(2) alone, which
// removes nothing else (not a file, not a symlink, not a directory that
// holds anything); os.Remove tries unlink(2) first, which fails on a
// directory.
func (o *opc) rmdir(dir string) error {
	o.add(callRmdir)
	return ignoringEINTR(func() error { return syscall.Rmdir(dir) }, "remove", dir)
}

func ignoringEINTR(f func() error, op, path string) error {
	for {
		err := f()
		switch {
		case err == nil:
			return nil
		case err != syscall.EINTR:
			return &fs.PathError{Op: op, Path: path, Err: err}
		}
	}
}

// emptyDir reports whether dir holds nothing: an open, a getdents (two
// for an empty directory) and a close.
func (o *opc) emptyDir(dir string) (bool, error) {
	o.add(callOpen)
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer func() { o.add(callClose); f.Close() }()
	o.add(callGetdents)
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, nil
	}
	o.add(callGetdents) // the first one read only "." and ".."
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return true, nil
}
