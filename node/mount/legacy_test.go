package mount

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The mount checks as they were before the table index and the O(1)
// checks: one full parse of the table per check, a linear search. Kept as
// the reference the new code is compared with (tests) and measured against
// (benchmarks).

func legacyParse(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 6 {
			return nil, fmt.Errorf("mountinfo line %d: %d fields", n, len(f))
		}
		id, err1 := strconv.Atoi(f[0])
		parent, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mountinfo line %d: bad mount IDs", n)
		}
		out = append(out, mountEntry{
			ID: id, Parent: parent, Dev: f[2],
			Root:     unescapeOctal(f[3]),
			Point:    unescapeOctal(f[4]),
			ReadOnly: slices.Contains(strings.Split(f[5], ","), "ro"),
		})
	}
	return out, sc.Err()
}

func legacyTop(entries []mountEntry, point string) *mountEntry {
	var top *mountEntry
	for i := range entries {
		if entries[i].Point == point {
			top = &entries[i]
		}
	}
	return top
}

func legacySourceOf(entries []mountEntry, t *mountEntry, avoid string) string {
	var best *mountEntry
	for i := range entries {
		e := &entries[i]
		if e.ID == t.ID || e.Dev != t.Dev || below(t.Point, e.Point) || !holds(e.Root, t.Root) {
			continue
		}
		if better(e, best, avoid) {
			best = e
		}
	}
	if best == nil {
		return t.Root
	}
	return filepath.Join(best.Point, strings.TrimPrefix(t.Root, best.Root))
}

// legacyLookup is the old bind.lookup: the mount table and the mount
// visible at target, if any.
func legacyLookup(target string) ([]mountEntry, *mountEntry, error) {
	fi, err := os.Lstat(target)
	if os.IsNotExist(err) || err == nil && fi.Mode().Type() == os.ModeSymlink {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(target))
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	entries, err := legacyParse(f)
	if err != nil {
		return nil, nil, err
	}
	return entries, legacyTop(entries, filepath.Join(parent, filepath.Base(target))), nil
}

// unescapeOctal is unescape for strings.
func unescapeOctal(s string) string {
	var b strings.Builder
	appendUnescaped(&b, []byte(s))
	return b.String()
}

// holds reports whether directory root (of a filesystem) contains sub.
func holds(root, sub string) bool {
	return root == "/" || below(root, sub)
}
