package mount

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A blank read-only device is refused, never formatted: no mkfs.ext4
// runs, not a byte changes, no target is made.
func TestBlockReadOnlyBlankRefused(t *testing.T) {
	e := newBlockEnv(t)
	dev, gm := e.bindLoop(t, newImage(t), true), e.globalMount(t, "vol-1")
	before := sum(t, dev)
	err := e.m.Stage(dev, gm)
	if !errors.Is(err, ErrUnformattedReadOnly) || !strings.Contains(err.Error(), dev) {
		t.Fatalf("Stage = %v, want ErrUnformattedReadOnly naming %s", err, dev)
	}
	if sum(t, dev) != before {
		t.Fatal("the device changed")
	}
	if exists(gm) {
		t.Fatalf("%s was made", gm)
	}
	e.wantRuns(t, "mkfs.ext4", 0)
	e.wantRuns(t, "e2fsck", 0)
}

// The ext4 of a read-only device is mounted read-only, unchecked: two
// devices of one image (two machines of a ReadOnlyMany disk) are staged
// at once, each shows what the image holds, every write fails with EROFS
// (a read-write publish included), and a repeated stage is a success.
func TestBlockReadOnlyStage(t *testing.T) {
	e := newBlockEnv(t)
	img := newImage(t)
	tool(t, "mkfs.ext4", "-q", "-m", "0", img)
	tool(t, "debugfs", "-w", "-R", "mkdir kept", img)
	dev1, dev2 := e.bindLoop(t, img, true), e.bindLoop(t, img, true)
	gm1, gm2 := e.globalMount(t, "vol-1"), e.globalMount(t, "vol-2")
	must(t, e.m.Stage(dev1, gm1))
	must(t, e.m.Stage(dev2, gm2))
	must(t, e.m.Stage(dev1, gm1))
	for dev, gm := range map[string]string{dev1: gm1, dev2: gm2} {
		e.wantState(t, gm, Mounted, dev)
		if opts, super := mountOptions(t, gm); !slices.Contains(opts, "ro") || !slices.Contains(super, "ro") || slices.Contains(super, "norecovery") {
			t.Errorf("%s is mounted %q (super %q), want ro and its journal loaded", gm, opts, super)
		}
		if fi, err := os.Stat(filepath.Join(gm, "kept")); err != nil || !fi.IsDir() {
			t.Errorf("%s does not show the image's directory: %v", gm, err)
		}
		wantWritable(t, gm, false)
	}
	pv := e.podVolume(t, "uid-1", "vol-1")
	must(t, e.m.Publish(gm1, pv, false))
	wantWritable(t, pv, false)
	e.wantRuns(t, "e2fsck", 0)
	e.wantRuns(t, "mkfs.ext4", 0)
	must(t, e.m.Unpublish(pv))
	must(t, e.m.Unstage(gm1))
	must(t, e.m.Unstage(gm2))
	e.wantState(t, gm1, Absent, "")
}

// A read-only device whose journal needs replaying (a read-write mount
// that crashed) is mounted without loading its journal: the kernel
// refuses it otherwise, as a read-only device cannot be replayed.
func TestBlockReadOnlyJournalNeedsRecovery(t *testing.T) {
	e := newBlockEnv(t)
	img := newImage(t)
	tool(t, "mkfs.ext4", "-q", "-m", "0", img)
	tool(t, "debugfs", "-w", "-R", "feature needs_recovery", img)
	dev, gm := e.bindLoop(t, img, true), e.globalMount(t, "vol-1")
	must(t, e.m.Stage(dev, gm))
	e.wantState(t, gm, Mounted, dev)
	if _, super := mountOptions(t, gm); !slices.Contains(super, "ro") || !slices.Contains(super, "norecovery") {
		t.Errorf("%s: super options %q, want ro and norecovery (noload)", gm, super)
	}
	wantWritable(t, gm, false)
	e.wantRuns(t, "e2fsck", 0)
	must(t, e.m.Unstage(gm))
}

// mountOptions reads the per-mount and superblock options that
// /proc/self/mountinfo shows for the mount at point.
func mountOptions(t *testing.T, point string) (opts, super []string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || sep+3 >= len(f) || unescaped([]byte(f[4])) != point {
			continue
		}
		opts, super = strings.Split(f[5], ","), strings.Split(f[sep+3], ",")
	}
	if opts == nil {
		t.Fatalf("%s is not in the mount table", point)
	}
	return opts, super
}
