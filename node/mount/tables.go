package mount

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"weak"
)

// selfTables reads this process's mount table. It is the one place the
// package reads the table from, and it is shared on purpose: every node
// agent of a process sees the same table, so reads asked for at about the
// same time (agents starting together) are one read.
var selfTables = &tableReader{path: "/proc/self/mountinfo"}

// tableReader reads a mount table for many callers at once. A caller takes
// a view, which fixes the moment it asked; the table the view gets comes
// from a read that STARTED after that moment, so it shows every mount made
// or removed before the caller asked. One read serves every caller who
// asked before it started: a caller who asks while a read is running
// waits for the next one, which starts when the running one ends, and
// shares it with everyone else who asked meanwhile.
type tableReader struct {
	path string

	mu      sync.Mutex
	started uint64              // reads started so far; each read's seq is its rank
	flight  *flight             // the read running, if any
	last    weak.Pointer[table] // the newest table read, while someone holds it
	lastSeq uint64
}

type flight struct {
	seq  uint64
	done chan struct{}
	tab  *table
	err  error
}

// view returns a view asked for now.
func (r *tableReader) view() *tableView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &tableView{r: r, asked: r.started}
}

// tableView is one caller's claim on a table read after it asked. The
// table, once got, is kept: every entry of one Scan sees the same table.
type tableView struct {
	r     *tableReader
	asked uint64 // reads with a greater seq started after the view was made

	mu  sync.Mutex
	tab *table
}

// get returns a table read after the view was made; the first call may
// read, later ones return the same table.
func (v *tableView) get() (*table, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tab != nil {
		return v.tab, nil
	}
	t, err := v.r.since(v.asked)
	if err != nil {
		return nil, err
	}
	v.tab = t
	return t, nil
}

// since returns a table from a read with a seq greater than asked (one
// that started after the caller asked), reading only if no such read has
// run or is running.
func (r *tableReader) since(asked uint64) (*table, error) {
	r.mu.Lock()
	for {
		if t := r.last.Value(); t != nil && r.lastSeq > asked {
			r.mu.Unlock()
			return t, nil
		}
		f := r.flight
		if f == nil {
			break
		}
		r.mu.Unlock()
		<-f.done
		if f.seq > asked {
			return f.tab, f.err
		}
		r.mu.Lock() // it started before the caller asked: another is needed
	}
	r.started++
	f := &flight{seq: r.started, done: make(chan struct{})}
	r.flight = f
	r.mu.Unlock()

	f.tab, f.err = r.read()
	if f.tab != nil {
		f.tab.seq = f.seq
	}
	r.mu.Lock()
	r.flight = nil
	if f.err == nil {
		r.last, r.lastSeq = weak.Make(f.tab), f.seq
	}
	r.mu.Unlock()
	close(f.done)
	return f.tab, f.err
}

// read parses the table; without one (not Linux) it is empty.
func (r *tableReader) read() (*table, error) {
	f, err := os.Open(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &table{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}
