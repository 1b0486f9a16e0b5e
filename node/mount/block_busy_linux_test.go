package mount

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// A device another program has open exclusively (an e2fsck or mkfs.ext4
// left running by a killed agent) is refused with ErrDeviceBusy naming
// it, never ErrNeedsFsck: not a byte changes, nothing is mounted, no
// target is made. Once the program lets go, the same stage succeeds,
// checking or formatting the device once. The program takes the device
// either before the stage begins (the stage's own check finds it: no tool
// runs on it) or just before the tool runs (after the stage's check: the
// tool refuses it, and its refusal reads as ErrDeviceBusy too).
func TestBlockStageDeviceBusy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ext4      bool
		beforeRun bool // taken just before the tool runs, not before the stage
		tool      string
	}{
		{name: "blank, held", tool: "mkfs.ext4"},
		{name: "ext4, held", ext4: true, tool: "e2fsck"},
		{name: "blank, taken before mkfs.ext4", beforeRun: true, tool: "mkfs.ext4"},
		{name: "ext4, taken before e2fsck", ext4: true, beforeRun: true, tool: "e2fsck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newBlockEnv(t)
			dev, gm := e.newLoop(t), e.globalMount(t, "vol-1")
			if tc.ext4 {
				tool(t, "mkfs.ext4", "-q", "-m", "0", dev)
			}
			before := sum(t, dev)
			var letGo func()
			if tc.beforeRun {
				e.m = NewBlock(e.l, WithRunner(func(name string, args ...string) (ToolOutput, error) {
					if name == tc.tool && letGo == nil {
						letGo = holdExclusive(t, dev)
					}
					return e.count(name, args...)
				}))
			} else {
				letGo = holdExclusive(t, dev)
			}

			err := e.m.Stage(dev, gm)
			if !errors.Is(err, ErrDeviceBusy) || errors.Is(err, ErrNeedsFsck) || !strings.Contains(err.Error(), dev+" is in use by another program") {
				t.Fatalf("Stage = %v; want ErrDeviceBusy saying %s is in use by another program, not ErrNeedsFsck", err, dev)
			}
			t.Logf("held: %v", err)
			if sum(t, dev) != before {
				t.Fatal("the device changed")
			}
			if pts := mountsOf(t, dev); len(pts) > 0 {
				t.Fatalf("%s is mounted at %q", dev, pts)
			}
			if tc.beforeRun {
				e.wantRuns(t, tc.tool, 1) // and refused
			} else {
				e.wantRuns(t, tc.tool, 0)
				if exists(gm) {
					t.Fatalf("%s was made", gm)
				}
			}

			letGo()
			must(t, e.m.Stage(dev, gm))
			e.wantState(t, gm, Mounted, dev)
			if p := probeOf(t, dev); p.Type != "ext4" {
				t.Fatalf("after the stage: %+v, want ext4", p)
			}
			runs := 1
			if tc.beforeRun {
				runs = 2
			}
			e.wantRuns(t, tc.tool, runs)
			if tc.ext4 {
				e.wantRuns(t, "mkfs.ext4", 0)
			}
			must(t, e.m.Unstage(gm))
		})
	}
}

// holdExclusive opens the block device dev exclusively (O_EXCL), as an
// e2fsck or mkfs.ext4 running on it does, and returns the function that
// closes it; t's cleanup closes it too, if the test has not.
func holdExclusive(t *testing.T, dev string) (letGo func()) {
	t.Helper()
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("holding %s exclusively: %v", dev, err)
	}
	var once sync.Once
	letGo = func() {
		once.Do(func() {
			if err := unix.Close(fd); err != nil {
				t.Errorf("letting go of %s: %v", dev, err)
			}
		})
	}
	t.Cleanup(letGo)
	return letGo
}

// mountsOf lists the mount points of the block device dev in this
// process's mount table.
func mountsOf(t *testing.T, dev string) []string {
	t.Helper()
	d, err := checkBlockDevice(opName("test"), dev)
	must(t, err)
	tab, err := readBlockMounts()
	must(t, err)
	return tab.pointsOf(d.id())
}
