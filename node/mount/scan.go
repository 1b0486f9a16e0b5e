package mount

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tether/tether/node/layout"
)

// Kinds of Entry.
const (
	KindStage   = "stage"
	KindPublish = "publish"
)

// Entry is one stage or publish target found on disk.
type Entry struct {
	Kind   string // KindStage or KindPublish
	UID    string // workload UID; publishes only
	Plugin string
	Volume string
	Path   string
	State  State
	Source string // as reported by Inspect
}

// Found is what Scan read.
type Found struct {
	// Entries, sorted by Path (so stages, under plugins/, come first).
	Entries []Entry
	// Invalid lists, sorted, the paths Scan cannot account for: names that
	// fail layout.ValidName, and non-directories (symlinks included) where
	// the layout has a directory. They are reported, never touched or
	// followed.
	Invalid []string
}

// Scan reads what is on disk under the layout, for reconstruction after an
// agent restart: every <root>/plugins/<plugin>/mounts/<volume> and every
// <root>/pods/<uid>/volumes/<plugin>/<volume>, with its state as m sees it.
// Missing directories are an empty result; other files in a pod directory
// (anything but volumes/) are ignored. Scan changes nothing.
func Scan(l layout.Layout, m Mounter) (Found, error) {
	return ScanContext(context.Background(), l, m)
}

// ScanContext is Scan that stops waiting for Inspect when ctx is done: only
// Inspect touches the targets, which are mount points and so can hang (a
// dead network filesystem); the directories above them are the agent's own.
// With a ctx that can be done, every Inspect runs in a goroutine of its
// own, all at once; an entry whose Inspect has not answered when ctx is done
// has State Unknown, and its goroutine ends when its call returns. With the
// bind mounter itself (not wrapped), every Inspect names its source from
// one read of the mount table, made after ScanContext was called and
// shared with other Scans asking at the same time; a wrapped one reads per
// mounted target, as Inspect does. Over a Memory mounter (wrapped or not,
// see Unwrapper) it reads the table, not the disk.
func ScanContext(ctx context.Context, l layout.Layout, m Mounter) (Found, error) {
	if mm, ok := memoryOf(m); ok && mm.l.Root() == l.Root() {
		f := mm.scan() // the table is what is mounted: nothing on disk to walk
		slices.SortFunc(f.Entries, func(a, b Entry) int { return cmp.Compare(a.Path, b.Path) })
		slices.Sort(f.Invalid)
		return f, nil
	}
	inspect := m.Inspect
	if si, ok := m.(sharedInspector); ok {
		inspect = si.inspector() // before the walk: the table is read after Scan was called
	}
	var f Found
	s := scanner{l: l, m: m, found: &f}
	if err := s.stages(); err != nil {
		return Found{}, err
	}
	if err := s.publishes(); err != nil {
		return Found{}, err
	}
	if err := inspectAll(ctx, inspect, f.Entries); err != nil {
		return Found{}, err
	}
	slices.SortFunc(f.Entries, func(a, b Entry) int { return cmp.Compare(a.Path, b.Path) })
	slices.Sort(f.Invalid)
	return f, nil
}

type scanner struct {
	l     layout.Layout
	m     Mounter
	found *Found
}

// stages walks plugins/<plugin>/mounts/<volume>.
func (s scanner) stages() error {
	plugins, err := s.dirs(filepath.Join(s.l.Root(), layout.PluginsDir), layout.KindPlugin)
	if err != nil {
		return err
	}
	for _, plugin := range plugins {
		mounts := filepath.Join(s.l.Root(), layout.PluginsDir, plugin, layout.MountsDir)
		if err := s.targets(mounts, false, Entry{Kind: KindStage, Plugin: plugin}); err != nil {
			return err
		}
	}
	return nil
}

// publishes walks pods/<uid>/volumes/<plugin>/<volume>.
func (s scanner) publishes() error {
	uids, err := s.dirs(filepath.Join(s.l.Root(), layout.PodsDir), layout.KindWorkload)
	if err != nil {
		return err
	}
	for _, uid := range uids {
		volumes := filepath.Join(s.l.Root(), layout.PodsDir, uid, layout.VolumesDir)
		plugins, err := s.dirs(volumes, layout.KindPlugin)
		if err != nil {
			return err
		}
		for _, plugin := range plugins {
			e := Entry{Kind: KindPublish, UID: uid, Plugin: plugin}
			if err := s.targets(filepath.Join(volumes, plugin), true, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// targets adds an entry, based on e, for every valid name in dir (not yet
// inspected). checked: dirs found dir a real directory.
func (s scanner) targets(dir string, checked bool, e Entry) error {
	names, err := s.names(dir, checked, layout.KindVolume)
	if err != nil {
		return err
	}
	for _, name := range names {
		e.Volume, e.Path = name, filepath.Join(dir, name)
		s.found.Entries = append(s.found.Entries, e)
	}
	return nil
}

// dirs returns the valid names of real directories in dir; the others are
// reported in Invalid. A missing (or non-directory) dir has none. The
// type is the directory entry's (no lstat per entry; os.ReadDir looks at
// the entry itself on a filesystem that does not say).
func (s scanner) dirs(dir, kind string) ([]string, error) {
	entries, err := s.entries(dir, false, kind)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range entries {
		if de.IsDir() {
			out = append(out, de.Name())
		} else {
			s.found.Invalid = append(s.found.Invalid, filepath.Join(dir, de.Name()))
		}
	}
	return out, nil
}

// names returns the valid names in dir, reporting the others in Invalid.
// dir itself must not be a symlink: Scan never follows one. It is looked
// at first unless checked (dirs found it a real directory).
func (s scanner) names(dir string, checked bool, kind string) ([]string, error) {
	entries, err := s.entries(dir, checked, kind)
	out := make([]string, len(entries))
	for i, de := range entries {
		out[i] = de.Name()
	}
	return out, err
}

// entries is names with the directory entries.
func (s scanner) entries(dir string, checked bool, kind string) ([]fs.DirEntry, error) {
	if !checked {
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("mount: scan: %w", err)
		}
		if !fi.IsDir() {
			s.found.Invalid = append(s.found.Invalid, dir)
			return nil, nil
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("mount: scan: %w", err)
	}
	out := entries[:0]
	for _, de := range entries {
		if layout.ValidName(kind, de.Name()) != nil {
			s.found.Invalid = append(s.found.Invalid, filepath.Join(dir, de.Name()))
			continue
		}
		out = append(out, de)
	}
	return out, nil
}
