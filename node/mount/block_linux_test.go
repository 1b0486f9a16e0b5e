package mount

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBlockFormatOnce: a blank device is formatted on its first stage
// only; what was written to it survives an unstage and a stage.
func TestBlockFormatOnce(t *testing.T) {
	e := newBlockEnv(t)
	dev, gm := e.newLoop(t), e.globalMount(t, "vol-1")
	must(t, e.m.Stage(dev, gm))
	e.wantState(t, gm, Mounted, dev)
	first := probeOf(t, dev)
	if first.Type != "ext4" || first.UUID == "" {
		t.Fatalf("after stage: %+v, want ext4 with a UUID", first)
	}
	writeFile(t, filepath.Join(gm, "data.txt"), "kept")
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")

	must(t, e.m.Stage(dev, gm))
	e.wantState(t, gm, Mounted, dev)
	if got := readFile(t, filepath.Join(gm, "data.txt")); got != "kept" {
		t.Fatalf("data.txt = %q after a second stage", got)
	}
	if again := probeOf(t, dev); again.UUID != first.UUID {
		t.Fatalf("UUID %s became %s: formatted again", first.UUID, again.UUID)
	}
	e.wantRuns(t, "mkfs.ext4", 1)
	e.wantRuns(t, "e2fsck", 1)
	must(t, e.m.Unstage(gm))
}

// TestBlockRefusesForeignContent: a device with anything but ext4 on it
// is refused; not a byte of it changes and no target is made.
func TestBlockRefusesForeignContent(t *testing.T) {
	mbr := func(t *testing.T, dev string) {
		entry := make([]byte, 16) // one Linux partition from sector 2048
		entry[4] = 0x83
		binary.LittleEndian.PutUint32(entry[8:], 2048)
		binary.LittleEndian.PutUint32(entry[12:], 4096)
		writeAt(t, dev, 446, entry)
		writeAt(t, dev, 510, []byte{0x55, 0xaa})
	}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, dev string)
		says  string
	}{
		{name: "partition table", write: mbr, says: "partition table (dos)"},
		{name: "ext4 in a partitioned device", write: func(t *testing.T, dev string) {
			tool(t, "mkfs.ext4", "-q", dev)
			mbr(t, dev)
		}, says: "partition table"},
		{name: "swap", write: func(t *testing.T, dev string) {
			writeAt(t, dev, 1024, []byte{1, 0, 0, 0, 0xff, 0x0f, 0, 0}) // version 1, last page
			writeAt(t, dev, 4096-10, []byte("SWAPSPACE2"))
		}, says: "swap"},
		{name: "ext2", write: func(t *testing.T, dev string) { tool(t, "mke2fs", "-q", "-t", "ext2", dev) }, says: "ext2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newBlockEnv(t)
			dev, gm := e.newLoop(t), e.globalMount(t, "vol-1")
			tc.write(t, dev)
			before := sum(t, dev)
			err := e.m.Stage(dev, gm)
			if !errors.Is(err, ErrForeignContent) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Stage = %v, want ErrForeignContent saying %q", err, tc.says)
			}
			if sum(t, dev) != before {
				t.Fatal("the device changed")
			}
			if exists(gm) {
				t.Fatalf("%s was made", gm)
			}
			e.wantRuns(t, "mkfs.ext4", 0)
			e.wantRuns(t, "e2fsck", 0)
		})
	}
}

// TestBlockStageIdempotent: a stage repeated on a target that shows the
// device neither probes nor checks it again.
func TestBlockStageIdempotent(t *testing.T) {
	e := newBlockEnv(t)
	dev, gm := e.newLoop(t), e.globalMount(t, "vol-1")
	must(t, e.m.Stage(dev, gm))
	must(t, e.m.Stage(dev, gm))
	e.wantState(t, gm, Mounted, dev)
	e.wantRuns(t, "blkid", 1)
	must(t, e.m.Unstage(gm))
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")
}

// TestBlockStageRefusals: a target showing something else, a device
// mounted elsewhere and a target holding data are refused, the other
// device untouched.
func TestBlockStageRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		// given stages or mounts what the test needs and returns the
		// device and target of the stage that must fail.
		given          func(t *testing.T, e *blockEnv) (dev, target string)
		want           error
		blkids, mkfses int // runs, the given stages included
	}{
		{name: "target shows another device", want: ErrConflict, given: func(t *testing.T, e *blockEnv) (string, string) {
			gm := e.globalMount(t, "vol-1")
			must(t, e.m.Stage(e.newLoop(t), gm))
			return e.newLoop(t), gm
		}, blkids: 1, mkfses: 1},
		{name: "target shows a bind mount", want: ErrConflict, given: func(t *testing.T, e *blockEnv) (string, string) {
			gm := e.globalMount(t, "vol-1")
			must(t, NewBind(e.l).Stage(e.src, gm))
			return e.newLoop(t), gm
		}},
		{name: "device mounted elsewhere", want: ErrDeviceInUse, given: func(t *testing.T, e *blockEnv) (string, string) {
			dev := e.newLoop(t)
			must(t, e.m.Stage(dev, e.globalMount(t, "vol-1")))
			return dev, e.globalMount(t, "vol-2")
		}, blkids: 1, mkfses: 1},
		{name: "target holds data", want: ErrNotEmpty, given: func(t *testing.T, e *blockEnv) (string, string) {
			gm := e.globalMount(t, "vol-1")
			mkdir(t, gm)
			writeFile(t, filepath.Join(gm, "precious"), "x")
			return e.newLoop(t), gm
		}, blkids: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newBlockEnv(t)
			dev, target := tc.given(t, e)
			before := sum(t, dev)
			if err := e.m.Stage(dev, target); !errors.Is(err, tc.want) {
				t.Fatalf("Stage = %v, want %v", err, tc.want)
			}
			if sum(t, dev) != before {
				t.Fatal("the device changed")
			}
			e.wantRuns(t, "blkid", tc.blkids)
			e.wantRuns(t, "mkfs.ext4", tc.mkfses)
		})
	}
}

// TestBlockPublish: a publish shows the stage, read-only when asked, and
// changes mode when repeated with the other one.
func TestBlockPublish(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		t.Run(map[bool]string{true: "read-only", false: "read-write"}[readOnly], func(t *testing.T) {
			e := newBlockEnv(t)
			dev, gm, pv := e.newLoop(t), e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
			must(t, e.m.Stage(dev, gm))
			must(t, e.m.Publish(gm, pv, readOnly))
			must(t, e.m.Publish(gm, pv, readOnly))
			e.wantState(t, pv, Mounted, gm)
			wantWritable(t, pv, !readOnly)
			if !readOnly && readFile(t, filepath.Join(gm, "probe")) != "w" {
				t.Fatal("a write through the publish is not in the stage")
			}
			must(t, e.m.Publish(gm, pv, !readOnly))
			wantWritable(t, pv, readOnly)
			must(t, e.m.Unpublish(pv))
			e.wantState(t, pv, Absent, "")
			must(t, e.m.Unstage(gm))
		})
	}
}

// wantWritable checks whether a file can be written under dir; a
// read-only one fails with EROFS.
func wantWritable(t *testing.T, dir string, writable bool) {
	t.Helper()
	err := os.WriteFile(filepath.Join(dir, "probe"), []byte("w"), 0o640)
	switch {
	case writable && err != nil:
		t.Fatalf("write under %s: %v, want success", dir, err)
	case !writable && !errors.Is(err, unix.EROFS):
		t.Fatalf("write under %s: %v, want EROFS", dir, err)
	}
}

// TestBlockPublishUnstaged: a stage directory that is not mounted is not
// published (the workload would write to the node's disk).
func TestBlockPublishUnstaged(t *testing.T) {
	e := newBlockEnv(t)
	gm, pv := e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
	mkdir(t, gm)
	if err := e.m.Publish(gm, pv, false); err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Fatalf("Publish = %v, want a refusal", err)
	}
	if exists(pv) {
		t.Fatalf("%s was made", pv)
	}
}

// TestBlockBusy: an unmount of a mount in use fails with ErrBusy and
// leaves it mounted; once the file is closed it succeeds.
func TestBlockBusy(t *testing.T) {
	for _, op := range []string{"unstage", "unpublish"} {
		t.Run(op, func(t *testing.T) {
			e := newBlockEnv(t)
			dev, gm, pv := e.newLoop(t), e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
			must(t, e.m.Stage(dev, gm))
			must(t, e.m.Publish(gm, pv, false))
			target, undo, source := gm, e.m.Unstage, dev
			if op == "unpublish" {
				target, undo, source = pv, e.m.Unpublish, gm
			}
			f, err := os.Create(filepath.Join(target, "open.txt"))
			must(t, err)
			t.Cleanup(func() { f.Close() })
			err = undo(target)
			if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EBUSY) {
				t.Fatalf("%s = %v, want ErrBusy", op, err)
			}
			e.wantState(t, target, Mounted, source)
			must(t, f.Close())
			must(t, undo(target))
			e.wantState(t, target, Absent, "")
			must(t, e.m.Unpublish(pv))
			must(t, e.m.Unstage(gm))
		})
	}
}

// TestBlockScanAfterRestart: a new mounter (an agent restarted) reads the
// stages and publishes back, and undoes them.
func TestBlockScanAfterRestart(t *testing.T) {
	e := newBlockEnv(t)
	dev, gm, pv := e.newLoop(t), e.globalMount(t, "vol-1"), e.podVolume(t, "uid-1", "vol-1")
	must(t, e.m.Stage(dev, gm))
	must(t, e.m.Publish(gm, pv, true))

	m := NewBlock(e.l)
	want := []Entry{
		{Kind: KindStage, Plugin: "plug", Volume: "vol-1", Path: gm, State: Mounted, Source: dev},
		{Kind: KindPublish, UID: "uid-1", Plugin: "plug", Volume: "vol-1", Path: pv, State: Mounted, Source: gm},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, scan := range map[string]func() (Found, error){
		"Scan":        func() (Found, error) { return Scan(e.l, m) },
		"ScanContext": func() (Found, error) { return ScanContext(ctx, e.l, m) },
		"Observed":    func() (Found, error) { return Scan(e.l, Observed(m, func(string, error, time.Duration) {})) },
	} {
		f, err := scan()
		must(t, err)
		if len(f.Entries) != len(want) || len(f.Invalid) != 0 {
			t.Fatalf("%s: %+v, want %+v", name, f, want)
		}
		for i, got := range f.Entries {
			if got.Source = resolved(got.Source, want[i].Source); got != want[i] {
				t.Errorf("%s: entry %d = %+v, want %+v", name, i, got, want[i])
			}
		}
	}
	must(t, m.Unpublish(pv))
	must(t, m.Unstage(gm))
	f, err := Scan(e.l, m)
	must(t, err)
	if len(f.Entries) != 0 {
		t.Fatalf("after undoing: %+v", f.Entries)
	}
}

// resolved is want when got is want with symlinks resolved (the mount
// table's way), got otherwise.
func resolved(got, want string) string {
	if samePath(got, want) {
		return want
	}
	return got
}

// TestBlockNeedsFsck: a filesystem with errors e2fsck -p may not fix is
// not mounted, and the error tells the operator what to run.
func TestBlockNeedsFsck(t *testing.T) {
	e := newBlockEnv(t)
	dev, gm := e.newLoop(t), e.globalMount(t, "vol-1")
	tool(t, "mkfs.ext4", "-q", dev)
	tool(t, "debugfs", "-w", "-R", "clri <2>", dev)    // no root directory
	tool(t, "debugfs", "-w", "-R", "ssv state 2", dev) // marked as having errors
	err := e.m.Stage(dev, gm)
	if !errors.Is(err, ErrNeedsFsck) || !strings.Contains(err.Error(), "run e2fsck "+dev+" by hand") {
		t.Fatalf("Stage = %v, want ErrNeedsFsck telling to run e2fsck %s", err, dev)
	}
	e.wantState(t, gm, Partial, "")
	e.wantRuns(t, "mkfs.ext4", 0)
	must(t, e.m.Unstage(gm))
	e.wantState(t, gm, Absent, "")
}

// TestBlockSourceChecks: a stage's source must be a block device reached
// through no symlink; the target must be below the root.
func TestBlockSourceChecks(t *testing.T) {
	e := newBlockEnv(t)
	dev, gm := e.newLoop(t), e.globalMount(t, "vol-1")
	link := filepath.Join(e.base, "dev-link")
	must(t, os.Symlink(dev, link))
	devDir := filepath.Join(e.base, "dev-dir")
	must(t, os.Symlink(filepath.Dir(dev), devDir))
	file := filepath.Join(e.base, "file")
	writeFile(t, file, "")
	for _, tc := range []struct {
		name, source, target string
		want                 error
	}{
		{name: "symlink to a device", source: link, target: gm, want: ErrUnsafeSource},
		{name: "through a symlinked directory", source: filepath.Join(devDir, filepath.Base(dev)), target: gm, want: ErrUnsafeSource},
		{name: "character device", source: "/dev/null", target: gm, want: ErrNotBlockDevice},
		{name: "regular file", source: file, target: gm, want: ErrNotBlockDevice},
		{name: "directory", source: e.src, target: gm, want: ErrNotBlockDevice},
		{name: "missing", source: filepath.Join(e.base, "missing"), target: gm, want: fs.ErrNotExist},
		{name: "target outside", source: dev, target: filepath.Join(e.base, "elsewhere"), want: ErrOutside},
		{name: "target is the root", source: dev, target: e.l.Root(), want: ErrOutside},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.m.Stage(tc.source, tc.target); !errors.Is(err, tc.want) {
				t.Fatalf("Stage = %v, want %v", err, tc.want)
			}
		})
	}
	if p := probeOf(t, dev); !p.Blank {
		t.Fatalf("the device was written: %+v", p)
	}
	e.wantRuns(t, "blkid", 0)
	if exists(gm) {
		t.Fatalf("%s was made", gm)
	}
}
