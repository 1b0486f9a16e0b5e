package mount

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Work below a directory descriptor: the *at system calls the tree's
// operations make, each counted.

// at is a directory to work in: the descriptor fd (a directory found
// real and below the root) and pre, a path of directories below it that
// this operation made itself (so not symlinks; "" for fd itself).
type at struct {
	fd  int
	pre string
	own bool // fd was opened by this operation: close it
}

func (a at) path(name string) string {
	if a.pre == "" {
		return name
	}
	return a.pre + "/" + name
}

func (a at) close(op *opc) {
	if a.own {
		op.add(callClose)
		unix.Close(a.fd)
	}
}

// openDir returns sub below the held directory dirfd ("" for dirfd
// itself), or an error wrapping fs.ErrNotExist if it is missing.
func openDir(op *opc, dirfd int, sub string) (at, error) {
	if sub == "" {
		return at{fd: dirfd}, nil
	}
	fd, err := openat2(op, dirfd, sub)
	if err != nil {
		return at{}, pathErr(sub, err)
	}
	return at{fd: fd, own: true}, nil
}

// makeDirs returns sub below dirfd, making what is missing. It makes
// first and looks only where something is there already: a new
// workload's directories cost a mkdirat each, and nothing else. What
// is there is opened (openat2) and so refused if a symlink or a file;
// what this call made is a directory and is used through its path. A
// directory that goes missing meanwhile (ENOENT: removed once empty by
// another volume's unpublish) is the caller's to retry.
func makeDirs(op *opc, dirfd int, sub string) (at, error) {
	a := at{fd: dirfd}
	if sub == "" {
		return a, nil
	}
	comps := strings.Split(sub, "/")
	for i := 0; i < len(comps); {
		p := a.path(comps[i])
		err := mkdirat(op, a.fd, p)
		if err == nil {
			a.pre = p
			i++
			continue
		}
		if err != unix.EEXIST {
			a.close(op)
			return at{}, &fs.PathError{Op: "mkdirat", Path: sub, Err: err}
		}
		// p is there: open it and what lies below that is there too.
		fd, err := openat2(op, a.fd, a.path(strings.Join(comps[i:], "/")))
		if err == nil {
			a.close(op)
			return at{fd: fd, own: true}, nil
		}
		if err != unix.ENOENT {
			a.close(op)
			return at{}, pathErr(sub, err)
		}
		fd, err = openat2(op, a.fd, p)
		a.close(op)
		if err != nil {
			return at{}, pathErr(sub, err)
		}
		a = at{fd: fd, own: true}
		i++
	}
	return a, nil
}

func mkdirat(op *opc, dirfd int, path string) error {
	op.add(callMkdir)
	return retryEINTR(func() error { return unix.Mkdirat(dirfd, path, dirMode) })
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// lstatAt is fstatat(2) of name below dirfd, not following a last
// symlink.
func lstatAt(op *opc, dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	op.add(callLstat)
	err := retryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, err
}

// clearAt is clearTarget below a directory: it removes a symlink, or an
// empty directory (kept when keepDir), and refuses anything else (a
// directory with data: ErrNotEmpty). target names it in errors. ENOENT
// is returned as is (the caller tells absent from a directory gone).
func clearAt(op *opc, a at, name, target string, keepDir bool) error {
	st, err := lstatAt(op, a.fd, a.path(name))
	if err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		op.add(callUnlink)
		return removeErr(op, retryEINTR(func() error { return unix.Unlinkat(a.fd, a.path(name), 0) }))
	case unix.S_IFDIR:
	default:
		return fmt.Errorf("mount: %s: %q is not a directory (mode %o); left alone", op, target, st.Mode&unix.S_IFMT)
	}
	if !keepDir {
		err := rmdirAt(op, a.fd, a.path(name))
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			return notEmpty(op, target)
		}
		return removeErr(op, err)
	}
	empty, err := op.emptyDir(fdPath(a, name))
	if err != nil {
		return fmt.Errorf("mount: %s: %w", op, err)
	}
	if !empty {
		return notEmpty(op, target)
	}
	return nil
}

func rmdirAt(op *opc, dirfd int, path string) error {
	op.add(callRmdir)
	return retryEINTR(func() error { return unix.Unlinkat(dirfd, path, unix.AT_REMOVEDIR) })
}

// fdPath names name below a as a path the kernel resolves through the
// descriptor: for the calls that take no directory descriptor (mount,
// umount2, statfs).
func fdPath(a at, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(a.fd) + "/" + a.path(name)
}

// removePod removes a workload's directories below pods/ once empty:
// pods/<uid>/volumes/<plugin>, then volumes, then <uid>, stopping
// quietly at the first that holds anything. podsfd is pods/, sub
// "<uid>/volumes/<plugin>", which the caller opened (openat2) a moment
// ago, so none is a symlink.
func removePod(op *opc, podsfd int, sub string) error {
	for dir := sub; dir != ""; {
		err := rmdirAt(op, podsfd, dir)
		switch err {
		case nil, unix.ENOENT:
		case unix.ENOTEMPTY, unix.EEXIST, unix.EBUSY:
			return nil
		default:
			return fmt.Errorf("mount: %s: remove %s: %w", op, dir, err)
		}
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			break
		}
		dir = dir[:i]
	}
	return nil
}
