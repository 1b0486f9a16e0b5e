package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// The loop tests run chaos on the loop cloud: real loop devices, ext4
// formatted and mounted by the agents. They need root, loop devices and
// e2fsprogs, and fail (never skip) without them, saying so.

// A short chaos run on the loop cloud (the sim's kinds of faults, the
// cloud's from Faulty): zero violations, converged, every mount's disk
// checked, and nothing of it left mounted or bound.
func TestLoopChaosRunHoldsInvariants(t *testing.T) {
	dir := loopTestDir(t)
	rep := runLoop(t, Config{Seed: 5, Duration: 10 * time.Second, Volumes: 6, Nodes: 3, DataDir: dir})
	if rep.Violations != 0 || !rep.Converged {
		t.Fatalf("%d violations, converged=%v:\n%s", rep.Violations, rep.Converged, details(rep))
	}
	if rep.Kills < 100 || rep.Faults < 10 || rep.MountCalls < 20 || rep.DisksChecked == 0 {
		t.Fatalf("too little chaos: %d kills, %d faults, %d mount calls, %d disks checked", rep.Kills, rep.Faults, rep.MountCalls, rep.DisksChecked)
	}
}

// A checker counts on the loop cloud only if it can fail there too: each
// rule broken inside tether (or, I3-device, device paths trusted without
// a check) is reported. I1 cannot be broken on the loop cloud: it refuses
// a second exclusive attach itself (checkLoop).
func TestLoopBrokenRulesAreCaught(t *testing.T) {
	for _, inv := range []string{"I2", "I3", "I3-device", "I4", "I5"} {
		t.Run(inv, func(t *testing.T) {
			rep := runLoop(t, Config{Seed: 3, Duration: 2 * time.Second, Volumes: 6, Nodes: 3, Break: inv,
				Converge: 3 * time.Second, DataDir: loopTestDir(t)})
			for _, v := range rep.Found {
				if v.Invariant == inv[:2] && v.Volume != "" && v.Node != "" && len(v.History) > 0 {
					t.Logf("caught: %s", v)
					return
				}
			}
			t.Fatalf("breaking %s was not reported (%d mount calls); found:\n%s", inv, rep.MountCalls, details(rep))
		})
	}
}

// The disk check on real devices: a stage of volume b given a loop
// device bound to volume a's image (a device path nobody checked) is
// reported as I3, naming both images, read from the mount table and the
// kernel; the same stage of a's own device is not.
func TestLoopCheckerSeesAnotherVolumesDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root (running as uid %d): it binds a loop device, formats and mounts it", os.Geteuid())
	}
	dir := loopTestDir(t)
	image := func(v cloud.VolumeID) (string, error) { return filepath.Join(dir, string(v)+".img"), nil }
	a, _ := image("a")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 16<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", a).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup --find --show %s: %v: %s (needs loop devices)", a, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	l, err := layout.New(filepath.Join(dir, "node"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vol  cloud.VolumeID
		want []string
	}{{"b", []string{"I3"}}, {"a", nil}} {
		chk := &Checker{}
		chk.CheckImages(image)
		m := chk.WrapMounter("n1", mount.NewBlock(l))
		target, err := l.GlobalMount("p", string(tc.vol))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Unstage(target) }) // after a failure; before the device is released
		if err := m.Stage(dev, target); err != nil {
			t.Fatalf("stage %s on %s: %v", dev, target, err)
		}
		if err := m.Unstage(target); err != nil {
			t.Fatalf("unstage %s: %v", target, err)
		}
		var got []string
		for _, v := range chk.Violations() {
			if strings.Contains(v.Detail, "mounted a device bound to "+a+", not to the volume's image") {
				got = append(got, v.Invariant)
				t.Logf("caught: %s", v)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("stage of %s's image as volume %s: disk violations %v, want %v; all: %v", a, tc.vol, got, tc.want, chk.Violations())
		}
	}
}

func TestLoopRefusesI1AndAUsedDataDir(t *testing.T) {
	_, err := Run(context.Background(), Config{Seed: 1, Duration: time.Second, Volumes: 1, Nodes: 2, Cloud: process.CloudLoop, Break: "I1"})
	if err == nil || !strings.Contains(err.Error(), "cannot break I1 on the loop cloud") {
		t.Fatalf("breaking I1 on the loop cloud: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{Seed: 1, Duration: time.Second, Volumes: 1, Nodes: 2, Cloud: process.CloudLoop, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("a data directory that holds something: %v", err)
	}
}

// runLoop runs cfg on the loop cloud, then checks that it left nothing
// mounted below its data directory nor any loop device bound to a file
// there: the kernel's tables, not tether's code, say so.
func runLoop(t *testing.T, cfg Config) Report {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("chaos on the loop cloud needs root (running as uid %d): it binds loop devices, formats and mounts them", os.Geteuid())
	}
	cfg.Cloud = process.CloudLoop
	rep := run(t, cfg)
	checkReleased(t, cfg.DataDir)
	return rep
}

// loopTestDir is a fresh data directory, its symlinks resolved.
func loopTestDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkReleased fails the test for each mount below dir and each loop
// device bound to a file below it.
func checkReleased(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.HasPrefix(unescapeMountinfo(f[4]), dir+"/") {
			t.Errorf("leak: %s still mounted after the run", f[4])
		}
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.HasPrefix(string(b), dir+"/") {
			t.Errorf("leak: /dev/%s still bound to %s after the run", filepath.Base(filepath.Dir(filepath.Dir(f))), strings.TrimSpace(string(b)))
		}
	}
}

// The device check under stages (I5) on real devices: a volume's image
// bound to two loop devices, as after a console detach whose device the
// mount kept and a re-attach at a new one; a stage mounted from the old
// device is reported against the current one, and passes against itself.
func TestLoopStageOnAnOldDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root (running as uid %d): it binds loop devices, formats and mounts one", os.Geteuid())
	}
	dir := loopTestDir(t)
	img := filepath.Join(dir, "a.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	var devs []string
	for range 2 {
		out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
		if err != nil {
			t.Fatalf("losetup --find --show %s: %v: %s (needs loop devices)", img, err, out)
		}
		dev := strings.TrimSpace(string(out))
		devs = append(devs, dev)
		t.Cleanup(func() {
			if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
				t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
			}
		})
	}
	l, err := layout.New(filepath.Join(dir, "node"))
	if err != nil {
		t.Fatal(err)
	}
	m := mount.NewBlock(l)
	target, err := l.GlobalMount("p", "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unstage(target) }) // before the devices are released
	if err := m.Stage(devs[0], target); err != nil {
		t.Fatalf("stage %s on %s: %v", devs[0], target, err)
	}
	c := fixedDevices{inst: "i-1", current: map[cloud.VolumeID]string{"a": "/dev/xvdbb"}}
	if got, n := checkStageDevices("n1", l.Root(), m, c, fixedSource(devs[0])); len(got) != 0 || n != 1 {
		t.Fatalf("a stage of its current device: %v (%d checked)", got, n)
	}
	got, _ := checkStageDevices("n1", l.Root(), m, c, fixedSource(devs[1]))
	if len(got) != 1 || !strings.Contains(got[0].Detail, "not the volume's current device /dev/xvdbb ("+devs[1]+")") {
		t.Fatalf("a stage of the old device: %v", got)
	}
	t.Logf("caught: %s", got[0].Detail)
}
