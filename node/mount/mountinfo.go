package mount

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// parseMountinfo reads mountinfo lines. Paths are unescaped (the kernel
// writes space, tab, newline and backslash as \040, \011, \012, \134).
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 6 {
			return nil, fmt.Errorf("mount: mountinfo line %d: %d fields, want at least 6", n, len(f))
		}
		id, err1 := strconv.Atoi(f[0])
		parent, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mount: mountinfo line %d: bad mount IDs %q %q", n, f[0], f[1])
		}
		out = append(out, mountEntry{
			ID: id, Parent: parent, Dev: f[2],
			Root:     unescapeOctal(f[3]),
			Point:    unescapeOctal(f[4]),
			ReadOnly: slices.Contains(strings.Split(f[5], ","), "ro"),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mount: mountinfo: %w", err)
	}
	return out, nil
}

// unescapeOctal undoes the kernel's \ooo escapes; anything else is kept.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
			b.WriteByte(byte(v))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// topMount returns the entry mounted last at point (the one visible there),
// or nil.
func topMount(entries []mountEntry, point string) *mountEntry {
	var top *mountEntry
	for i := range entries {
		if entries[i].Point == point {
			top = &entries[i]
		}
	}
	return top
}

// sourceOf names a directory where the content t shows is visible too: the
// mount t was bound from, as far as the table can tell. Candidates are the
// other mounts of the same device whose root holds t's root, not at or
// below t's mount point. Preferred: a mount outside avoid (the pods
// directory: a publish's source is its stage, not a sibling publish), then
// the deepest root, then the shortest mount point. Without a candidate it
// returns t's root within its filesystem.
func sourceOf(entries []mountEntry, t *mountEntry, avoid string) string {
	var best *mountEntry
	better := func(e *mountEntry) bool {
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
	for i := range entries {
		e := &entries[i]
		if e.ID == t.ID || e.Dev != t.Dev || below(t.Point, e.Point) || !holds(e.Root, t.Root) {
			continue
		}
		if better(e) {
			best = e
		}
	}
	if best == nil {
		return t.Root
	}
	return filepath.Join(best.Point, strings.TrimPrefix(t.Root, best.Root))
}

// holds reports whether directory root (of a filesystem) contains sub.
func holds(root, sub string) bool {
	return root == "/" || below(root, sub)
}

// MountIDs maps each mount point of /proc/self/mountinfo to the ID of the
// mount visible there (the last one listed on that point). Without a mount
// table (not Linux) it is empty. The kernel reuses these IDs: they tell
// mounts apart at one moment, not over time.
func MountIDs() (map[string]int, error) {
	entries, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(entries))
	for _, e := range entries {
		out[e.Point] = e.ID
	}
	return out, nil
}

// readMountinfo parses /proc/self/mountinfo; without one (not Linux) it is
// empty.
func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

// ReadOnlyPoints lists the mount points of /proc/self/mountinfo whose
// visible mount (the last one listed there) is read-only. Without a mount
// table (not Linux) it is empty.
func ReadOnlyPoints() (map[string]bool, error) {
	entries, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	last := make(map[string]bool, len(entries))
	for _, e := range entries {
		last[e.Point] = e.ReadOnly
	}
	out := map[string]bool{}
	for p, ro := range last {
		if ro {
			out[p] = true
		}
	}
	return out, nil
}
