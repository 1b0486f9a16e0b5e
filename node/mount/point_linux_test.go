package mount

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// pointCase is a path to check and the mounts that make it what it is.
type pointCase struct {
	name  string
	setup func(t *testing.T, base string) string // returns the path to check
}

var pointCases = []pointCase{
	{"bind of a dir on the same fs", func(t *testing.T, base string) string {
		src, dst := dirs(t, base, "src", "dst")
		bindMount(t, src, dst)
		if devOf(t, dst) != devOf(t, base) {
			t.Fatal("the bind is not on the same device as its parent: the case tests nothing")
		}
		return dst
	}},
	{"dir bound onto itself", func(t *testing.T, base string) string {
		d, _ := dirs(t, base, "self", "unused")
		bindMount(t, d, d)
		return d
	}},
	{"tmpfs (another fs)", func(t *testing.T, base string) string {
		d, _ := dirs(t, base, "tmp", "unused")
		must(t, unix.Mount("tmpfs", d, "tmpfs", 0, "size=1m"))
		return d
	}},
	{"not mounted", func(t *testing.T, base string) string {
		d, _ := dirs(t, base, "plain", "unused")
		return d
	}},
	{"missing", func(t *testing.T, base string) string {
		return filepath.Join(base, "missing")
	}},
	{"symlink in the path", func(t *testing.T, base string) string {
		src, dst := dirs(t, base, "src", "real/dst")
		bindMount(t, src, dst)
		must(t, os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")))
		return filepath.Join(base, "link", "dst")
	}},
	{"symlink to a mount point", func(t *testing.T, base string) string {
		src, dst := dirs(t, base, "src", "dst")
		bindMount(t, src, dst)
		must(t, os.Symlink(dst, filepath.Join(base, "link")))
		return filepath.Join(base, "link")
	}},
	{"read-only bind", func(t *testing.T, base string) string {
		src, dst := dirs(t, base, "src", "dst")
		bindMount(t, src, dst)
		must(t, remount(nil, dst, true))
		return dst
	}},
	{"stacked binds", func(t *testing.T, base string) string {
		src, dst := dirs(t, base, "src", "dst")
		src2, _ := dirs(t, base, "src2", "unused")
		bindMount(t, src, dst)
		bindMount(t, src2, dst)
		return dst
	}},
	{"below a mount point", func(t *testing.T, base string) string {
		src, dst := dirs(t, base, "src", "dst")
		mkdir(t, filepath.Join(src, "sub"))
		bindMount(t, src, dst)
		return filepath.Join(dst, "sub")
	}},
}

// TestMountPointAgreesWithTable: every way of checking (the kernel's
// attribute, the device then the table, and isMountPoint, which picks)
// answers as the mount table does, and so does the read-only flag.
func TestMountPointAgreesWithTable(t *testing.T) {
	requireBind(t)
	for _, c := range pointCases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			t.Cleanup(func() { unmountUnder(t, base) })
			path := c.setup(t, base)

			_, top, err := legacyLookup(path)
			must(t, err)
			want := top != nil

			got, err := isMountPoint(nil, path)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("isMountPoint = %v, the table says %v", got, want)
			}
			root, known, err := mountRootAttr(nil, path)
			switch {
			case err != nil && !os.IsNotExist(err):
				t.Fatal(err)
			case err == nil && !known:
				t.Log("this kernel does not report STATX_ATTR_MOUNT_ROOT (before 5.8): isMountPoint falls back")
			case err == nil && root != want:
				t.Errorf("STATX_ATTR_MOUNT_ROOT = %v, the table says %v", root, want)
			}
			if got, err := fallbackMountPoint(path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			} else if got != want {
				t.Errorf("device, then table = %v, the table says %v", got, want)
			}
			if want {
				var st unix.Statfs_t
				must(t, unix.Statfs(path, &st))
				if ro := st.Flags&unix.ST_RDONLY != 0; ro != top.ReadOnly {
					t.Errorf("statfs read-only = %v, the table says %v", ro, top.ReadOnly)
				}
			}
		})
	}
}

// fallbackMountPoint is isMountPoint on a kernel without
// STATX_ATTR_MOUNT_ROOT.
func fallbackMountPoint(path string) (bool, error) {
	mounted, known, err := otherDevice(nil, path)
	if err != nil || known {
		return mounted, err
	}
	return tableShows(nil, selfTables.view(), path)
}

// TestInspectAgreesWithTable: Inspect, alone and through Scan, reports
// the state and source that a full read of the table gives.
func TestInspectAgreesWithTable(t *testing.T) {
	requireBind(t)
	e := newEnv(t)
	e.m = NewBind(e.l)
	tmp := filepath.Join(e.base, "tmpfs")
	mkdir(t, tmp)
	must(t, unix.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"))
	mkdir(t, filepath.Join(tmp, "content"))
	gmA, gmB, gmC, gmD := e.globalMount(t, "vol-a"), e.globalMount(t, "vol-b"), e.globalMount(t, "vol-c"), e.globalMount(t, "vol-d")
	pvA, pvB := e.podVolume(t, "uid-1", "vol-a"), e.podVolume(t, "uid-1", "vol-b")
	must(t, e.m.Stage(e.src, gmA))
	must(t, e.m.Stage(filepath.Join(tmp, "content"), gmB))
	must(t, e.m.Publish(gmA, pvA, true))
	must(t, e.m.Publish(gmB, pvB, false))
	mkdir(t, gmC) // not mounted
	mkdir(t, filepath.Dir(gmD))
	must(t, os.Symlink(e.src, gmD)) // a symlink: never a mount point

	found, err := Scan(e.l, e.m)
	must(t, err)
	if len(found.Entries) != 6 {
		t.Fatalf("Scan found %+v, want 6 entries", found.Entries)
	}
	for _, en := range found.Entries {
		entries, top, err := legacyLookup(en.Path)
		must(t, err)
		want, wantSource := Partial, ""
		if top != nil {
			want, wantSource = Mounted, legacySourceOf(entries, top, NewBind(e.l).(bind).avoid())
		}
		state, source, err := e.m.Inspect(en.Path)
		must(t, err)
		if state != want || source != wantSource {
			t.Errorf("Inspect(%s) = %s %q, the table says %s %q", en.Path, state, source, want, wantSource)
		}
		if en.State != want || en.Source != wantSource {
			t.Errorf("Scan: %s is %s %q, the table says %s %q", en.Path, en.State, en.Source, want, wantSource)
		}
	}
	e.wantState(t, filepath.Join(filepath.Dir(gmA), "vol-none"), Absent, "")
}

func dirs(t *testing.T, base, a, b string) (string, string) {
	t.Helper()
	pa, pb := filepath.Join(base, a), filepath.Join(base, b)
	mkdir(t, pa)
	mkdir(t, pb)
	return pa, pb
}

func bindMount(t *testing.T, src, dst string) {
	t.Helper()
	must(t, unix.Mount(src, dst, "", unix.MS_BIND, ""))
}

func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(path, &st))
	return st.Dev
}
