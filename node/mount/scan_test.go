package mount

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestScan(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, gmB := e.globalMount(t, "vol-a"), e.globalMount(t, "vol-b")
		pv1, pv2 := e.podVolume(t, "uid-1", "vol-a"), e.podVolume(t, "uid-2", "vol-a")
		partial := e.podVolume(t, "uid-3", "vol-b")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Publish(gm, pv1, false))
		must(t, e.m.Publish(gm, pv2, true))
		mkdir(t, gmB)     // interrupted stage
		mkdir(t, partial) // interrupted publish

		root := e.l.Root()
		invalid := []string{
			filepath.Join(root, "plugins", "plug", "mounts", ".hidden"),
			filepath.Join(root, "pods", "-bad"),
			filepath.Join(root, "pods", "uid-1", "volumes", "bad name"),
			filepath.Join(root, "pods", "uid-4"), // a symlink where a directory belongs
		}
		mkdir(t, invalid[0])
		mkdir(t, filepath.Join(invalid[1], "volumes", "plug", "x"))
		writeFile(t, filepath.Join(invalid[1], "volumes", "plug", "x", "keep"), "keep")
		mkdir(t, invalid[2])
		must(t, os.Symlink(e.base, invalid[3]))
		mkdir(t, filepath.Join(root, "pods", "uid-5", "containers")) // no volumes: ignored

		before := snapshot(t, e.base)
		found, err := Scan(e.l, e.m)
		must(t, err)
		sameSnapshot(t, before, snapshot(t, e.base))

		want := []Entry{
			{Kind: KindStage, Plugin: "plug", Volume: "vol-a", Path: gm, State: Mounted, Source: e.src},
			{Kind: KindStage, Plugin: "plug", Volume: "vol-b", Path: gmB, State: Partial},
			{Kind: KindPublish, UID: "uid-1", Plugin: "plug", Volume: "vol-a", Path: pv1, State: Mounted, Source: gm},
			{Kind: KindPublish, UID: "uid-2", Plugin: "plug", Volume: "vol-a", Path: pv2, State: Mounted, Source: gm},
			{Kind: KindPublish, UID: "uid-3", Plugin: "plug", Volume: "vol-b", Path: partial, State: Partial},
		}
		if len(found.Entries) != len(want) {
			t.Fatalf("Scan found %d entries, want %d: %+v", len(found.Entries), len(want), found.Entries)
		}
		for i, got := range found.Entries {
			w := want[i]
			if samePath(got.Source, w.Source) {
				w.Source = got.Source
			}
			if got != w {
				t.Errorf("entry %d = %+v\nwant %+v", i, got, w)
			}
		}
		if !reflect.DeepEqual(found.Invalid, invalid) {
			t.Errorf("Invalid = %q\nwant %q", found.Invalid, invalid)
		}
	})
}

func TestScanEmpty(t *testing.T) {
	e := newEnv(t)
	m := NewSymlink(e.l)
	found, err := Scan(e.l, m)
	if err != nil || len(found.Entries) != 0 || len(found.Invalid) != 0 {
		t.Fatalf("Scan of a missing root = %+v, %v; want empty", found, err)
	}
	if exists(e.l.Root()) {
		t.Fatal("Scan created the root")
	}
	mkdir(t, filepath.Join(e.l.Root(), "pods"))
	mkdir(t, filepath.Join(e.l.Root(), "plugins", "plug"))
	found, err = Scan(e.l, m)
	if err != nil || len(found.Entries) != 0 || len(found.Invalid) != 0 {
		t.Fatalf("Scan of empty directories = %+v, %v; want empty", found, err)
	}
}

// TestScanKeptDirs: what the mounters keep (pods/, a plugin's mounts/,
// empty once their volumes are gone) and what an unpublish interrupted
// before removing its workload's directories leaves (empty directories)
// read back as nothing: Scan finds the mounts there are, no more, and
// reports nothing invalid.
func TestScanKeptDirs(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, gm2 := e.globalMount(t, "vol-1"), e.globalMount(t, "vol-2")
		pv, pv2 := e.podVolume(t, "uid-1", "vol-1"), e.podVolume(t, "uid-2", "vol-2")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Publish(gm, pv, false))
		must(t, e.m.Stage(e.src, gm2))
		must(t, e.m.Publish(gm2, pv2, false))
		must(t, e.m.Unpublish(pv2))
		must(t, e.m.Unstage(gm2))
		mkdir(t, filepath.Dir(e.podVolume(t, "uid-3", "vol-3"))) // an unpublish interrupted
		if !exists(filepath.Dir(gm)) || !exists(filepath.Join(e.l.Root(), "pods")) {
			t.Fatal("want mounts/ and pods/ kept")
		}
		if exists(filepath.Dir(filepath.Dir(filepath.Dir(pv2)))) {
			t.Fatal("want uid-2's directories removed")
		}
		found, err := Scan(e.l, e.m)
		must(t, err)
		if len(found.Invalid) > 0 {
			t.Errorf("Scan reports %v invalid", found.Invalid)
		}
		want := []Entry{
			{Kind: KindStage, Plugin: "plug", Volume: "vol-1", Path: gm, State: Mounted, Source: e.src},
			{Kind: KindPublish, UID: "uid-1", Plugin: "plug", Volume: "vol-1", Path: pv, State: Mounted, Source: gm},
		}
		if len(found.Entries) != len(want) {
			t.Fatalf("Scan found %+v, want %+v", found.Entries, want)
		}
		for i, got := range found.Entries {
			if got.Source != want[i].Source && samePath(got.Source, want[i].Source) {
				got.Source = want[i].Source
			}
			if !reflect.DeepEqual(got, want[i]) {
				t.Errorf("entry %d = %+v, want %+v", i, got, want[i])
			}
		}
		must(t, e.m.Unpublish(pv))
		must(t, e.m.Unstage(gm))
		found, err = Scan(e.l, e.m)
		must(t, err)
		if len(found.Entries)+len(found.Invalid) > 0 {
			t.Errorf("Scan of kept, empty directories = %+v, want nothing", found)
		}
	})
}
