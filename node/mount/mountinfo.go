package mount

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
)

// mountEntry is one line of /proc/<pid>/mountinfo (proc(5)).
type mountEntry struct {
	ID       int
	Parent   int
	Dev      string // "major:minor"
	Root     string // the directory of the filesystem shown at Point
	Point    string // mount point, as the process sees it
	ReadOnly bool   // the per-mount "ro" option
}

// table is one read of a mount table: its entries in the kernel's order (of
// two mounts on one point, the later is on top), and indexes built on first
// use. It is never changed once read, so any number of goroutines share it.
type table struct {
	seq     uint64 // rank of the read that made it (tableReader)
	entries []mountEntry

	once  sync.Once
	tops  map[string]int32 // mount point -> its visible (last) entry
	heads map[devRoot]int32
	next  []int32 // next entry with the same device and root; -1 ends
}

type devRoot struct{ dev, root string }

// parseMountinfo reads mountinfo lines as they stream in. Paths are
// unescaped (the kernel writes space, tab, newline and backslash as \040,
// \011, \012, \134). The strings of all entries share one buffer and each
// line is split in place, so the allocations do not grow with the lines:
// only the buffer and the entry slice grow, by doubling.
func parseMountinfo(r io.Reader) (*table, error) {
	type span struct{ from, to int }
	type raw struct {
		id, parent       int
		dev, root, point span
		ro               bool
	}
	var (
		arena strings.Builder
		raws  []raw
	)
	put := func(b []byte, unescape bool) span {
		from := arena.Len()
		if unescape {
			appendUnescaped(&arena, b)
		} else {
			arena.Write(b)
		}
		return span{from, arena.Len()}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var f [6][]byte
	for n := 1; sc.Scan(); n++ {
		line, got := sc.Bytes(), 0
		for got < len(f) {
			if f[got], line = field(line); f[got] == nil {
				break
			}
			got++
		}
		if got == 0 {
			continue
		}
		if got < len(f) {
			return nil, fmt.Errorf("mount: mountinfo line %d: %d fields, want at least 6", n, got)
		}
		id, ok1 := atoi(f[0])
		parent, ok2 := atoi(f[1])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("mount: mountinfo line %d: bad mount IDs %q %q", n, f[0], f[1])
		}
		raws = append(raws, raw{
			id: id, parent: parent, dev: put(f[2], false), root: put(f[3], true), point: put(f[4], true),
			ro: hasOption(f[5], "ro"),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mount: mountinfo: %w", err)
	}
	s := arena.String()
	t := &table{entries: make([]mountEntry, len(raws))}
	for i, r := range raws {
		t.entries[i] = mountEntry{
			ID: r.id, Parent: r.parent, ReadOnly: r.ro,
			Dev: s[r.dev.from:r.dev.to], Root: s[r.root.from:r.root.to], Point: s[r.point.from:r.point.to],
		}
	}
	return t, nil
}

// field returns the first field of line (separated by spaces or tabs, nil
// if none) and what follows it.
func field(line []byte) (f, rest []byte) {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 {
		return nil, nil
	}
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		return line[:i], line[i:]
	}
	return line, nil
}

// atoi parses a non-negative decimal number.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func hasOption(opts []byte, opt string) bool {
	for len(opts) > 0 {
		o, rest, _ := bytes.Cut(opts, []byte{','})
		if string(o) == opt {
			return true
		}
		opts = rest
	}
	return false
}

// appendUnescaped appends s to b with the kernel's \ooo escapes undone;
// anything else is kept.
func appendUnescaped(b *strings.Builder, s []byte) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && '0' <= s[i+1] && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

func (t *table) index() {
	t.once.Do(func() {
		t.tops = make(map[string]int32, len(t.entries))
		t.heads = make(map[devRoot]int32, len(t.entries))
		t.next = make([]int32, len(t.entries))
		for i := range t.entries {
			e := &t.entries[i]
			t.tops[e.Point] = int32(i)
			k := devRoot{e.Dev, e.Root}
			t.next[i] = -1
			if h, ok := t.heads[k]; ok {
				t.next[i] = h
			}
			t.heads[k] = int32(i)
		}
	})
}

// top returns the entry mounted last at point (the one visible there), or
// nil.
func (t *table) top(point string) *mountEntry {
	t.index()
	if i, ok := t.tops[point]; ok {
		return &t.entries[i]
	}
	return nil
}

// sourceOf names a directory where the content m shows is visible too: the
// mount m was bound from, as far as the table can tell. Candidates are the
// other mounts of the same device whose root holds m's root, not at or
// below m's mount point. Preferred: a mount outside avoid (the pods
// directory: a publish's source is its stage, not a sibling publish), then
// the deepest root, then the shortest mount point. Without a candidate it
// returns m's root within its filesystem. It looks at the mounts of m's
// device whose root is m's root or one of its parents, never at the others.
func (t *table) sourceOf(m *mountEntry, avoid string) string {
	t.index()
	var best *mountEntry
	consider := func(root string) {
		for i, ok := t.heads[devRoot{m.Dev, root}]; ok && i >= 0; i = t.next[i] {
			e := &t.entries[i]
			if e.ID != m.ID && !below(m.Point, e.Point) && better(e, best, avoid) {
				best = e
			}
		}
	}
	consider("/") // holds every root
	for i := 1; i < len(m.Root); i++ {
		if m.Root[i] == '/' {
			consider(m.Root[:i])
		}
	}
	if m.Root != "/" {
		consider(m.Root)
	}
	if best == nil {
		return m.Root
	}
	return filepath.Join(best.Point, strings.TrimPrefix(m.Root, best.Root))
}

// better reports whether e is a better source candidate than best (nil:
// none yet), by the order sourceOf describes.
func better(e, best *mountEntry, avoid string) bool {
	if best == nil {
		return true
	}
	if ea, ba := below(avoid, e.Point), below(avoid, best.Point); ea != ba {
		return !ea
	}
	if len(e.Root) != len(best.Root) {
		return len(e.Root) > len(best.Root)
	}
	if len(e.Point) != len(best.Point) {
		return len(e.Point) < len(best.Point)
	}
	return e.Point < best.Point
}

// MountIDs maps each mount point of /proc/self/mountinfo to the ID of the
// mount visible there (the last one listed on that point). Without a mount
// table (not Linux) it is empty. The kernel reuses these IDs: they tell
// mounts apart at one moment, not over time.
func MountIDs() (map[string]int, error) {
	t, err := selfTables.view().get()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(t.entries))
	for _, e := range t.entries {
		out[e.Point] = e.ID
	}
	return out, nil
}

// ReadOnlyPoints lists the mount points of /proc/self/mountinfo whose
// visible mount (the last one listed there) is read-only. Without a mount
// table (not Linux) it is empty.
func ReadOnlyPoints() (map[string]bool, error) {
	t, err := selfTables.view().get()
	if err != nil {
		return nil, err
	}
	t.index()
	out := map[string]bool{}
	for p, i := range t.tops {
		if t.entries[i].ReadOnly {
			out[p] = true
		}
	}
	return out, nil
}
