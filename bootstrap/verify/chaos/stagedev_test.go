package chaos

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// The device under every stage, judged against the cloud's attachment
// now, through a console detach and a re-attach at another device (the
// path the volume had went to another volume meanwhile): a stage of the
// volume's own disk passes; one with no attachment behind it, or made
// from the reused path's old disk, does not.
func TestStageDevicesAfterConsoleDetachAndReattach(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c := sim.New(sim.Config{ContentDir: filepath.Join(dir, "cloud")})
	inst := c.AddInstance("n1")
	c.CreateVolume("v", cloud.Exclusive)
	c.CreateVolume("w", cloud.Exclusive)
	l, err := layout.New(filepath.Join(dir, "node"))
	if err != nil {
		t.Fatal(err)
	}
	m := mount.NewSymlink(l)
	t.Cleanup(func() {
		if err := agent.Teardown(l.Root(), m); err != nil {
			t.Error(err)
		}
	})
	devs := agent.SimDevices{Cloud: c, Node: "n1"}
	stage := func(vol cloud.VolumeID, src string) {
		t.Helper()
		target, err := l.GlobalMount("p", string(vol))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Stage(src, target); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want ...string) {
		t.Helper()
		var got []string
		vs, n := checkStageDevices("n1", l.Root(), m, c, devs)
		if n == 0 {
			t.Fatal("no stage checked")
		}
		for _, v := range vs {
			got = append(got, string(v.Volume)+": "+v.Detail)
		}
		if len(got) != len(want) {
			t.Fatalf("got %q, want %d violations like %q", got, len(want), want)
		}
		for i := range want {
			if !strings.Contains(got[i], want[i]) {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	}
	dev, err := c.Attach(ctx, "v", inst)
	if err != nil {
		t.Fatal(err)
	}
	vsrc, _, err := devs.Source(ctx, "v", dev)
	if err != nil {
		t.Fatal(err)
	}
	stage("v", vsrc)
	check() // its own disk at its device
	stale := &staleDevices{Devices: devs}
	if _, _, err := stale.Source(ctx, "v", dev); err != nil { // cached while v has the path
		t.Fatal(err)
	}
	if err := c.ConsoleDetach("v", inst); err != nil {
		t.Fatal(err)
	}
	check("v: stage of v on n1: the volume has no current device")
	wdev, err := c.Attach(ctx, "w", inst) // takes v's old path
	if err != nil {
		t.Fatal(err)
	}
	vdev, err := c.Attach(ctx, "v", inst)
	if err != nil {
		t.Fatal(err)
	}
	if wdev != dev || vdev == dev {
		t.Fatalf("devices: v %s then %s, w %s: want w on v's old path", dev, vdev, wdev)
	}
	check() // v re-attached at another device: its stage still shows its own disk
	wsrc, _, err := stale.Source(ctx, "w", wdev)
	if err != nil {
		t.Fatal(err)
	}
	stage("w", wsrc) // the stale cache's answer: v's disk
	check("w: stage of w on n1: shows")
	if err := os.WriteFile(filepath.Join(vsrc, "mark"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wt, _ := l.GlobalMount("p", "w")
	if ents, _ := os.ReadDir(wt); !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == "mark" }) {
		t.Fatal("w's stage does not show v's disk: the break proves nothing")
	}
}

// fixedDevices is a cloud whose node n1 has instance inst with current
// devices.
type fixedDevices struct {
	inst    cloud.InstanceID
	current map[cloud.VolumeID]string
}

func (f fixedDevices) InstanceOf(n cloud.NodeName) (cloud.InstanceID, bool) { return f.inst, n == "n1" }

func (f fixedDevices) InstanceVolumes(_ context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	return map[cloud.InstanceID]map[cloud.VolumeID]string{f.inst: f.current}, nil
}

// fixedSource resolves every device path to one source.
type fixedSource string

func (s fixedSource) Source(context.Context, cloud.VolumeID, string) (string, func(), error) {
	return string(s), func() {}, nil
}

// The real system with the I5-device break (a device cache never
// invalidated), scripted so that a device path is reused: v000 staged on
// the node's first device path and let go, then v001 given that path.
// Every mount the workloads want is in place, and only the device check
// tells that v001's stage shows v000's disk; the sound wiring converges.
func TestStaleDeviceCacheCaughtByI5(t *testing.T) {
	for _, brk := range []string{"", "I5-device"} {
		t.Run("break="+brk, func(t *testing.T) {
			r := scriptedRunner(t, Config{Seed: 1, Volumes: 2, Nodes: 1, Break: brk})
			n := r.e.NodeNames[0]
			apply := func(w store.Workload) {
				t.Helper()
				if err := r.e.Ctl().ApplyWorkload(w); err != nil {
					t.Fatal(err)
				}
				r.wls[w.UID] = w
			}
			converged := func(step string) {
				t.Helper()
				if d := waitConverged(context.Background(), 20*time.Second, r.diff); d != nil {
					t.Fatalf("%s: %v", step, d)
				}
			}
			apply(store.Workload{UID: "a", Node: n, Volumes: []cloud.VolumeID{"v000"}})
			converged("v000 mounted")
			if err := r.e.Ctl().DeleteWorkload("a"); err != nil {
				t.Fatal(err)
			}
			delete(r.wls, "a")
			converged("v000 let go")
			apply(store.Workload{UID: "b", Node: n, Volumes: []cloud.VolumeID{"v001"}})
			if brk == "" {
				converged("v001 mounted")
				if r.rep.StagesChecked != 1 {
					t.Fatalf("%d stages checked, want 1", r.rep.StagesChecked)
				}
				return
			}
			var d []Violation
			for deadline := time.Now().Add(20 * time.Second); ; {
				d = r.diff()
				if len(d) > 0 && !slices.ContainsFunc(d, func(v Violation) bool { return !strings.Contains(v.Detail, "not the volume's current device") }) {
					break // everything else in place: the stage's device alone is wrong
				}
				if time.Now().After(deadline) {
					t.Fatalf("the stale device was not caught alone: %v", d)
				}
				time.Sleep(20 * time.Millisecond) // polling ground truth with a deadline
			}
			if len(d) != 1 || d[0].Volume != "v001" {
				t.Fatalf("want v001's stage caught, got %v", d)
			}
			t.Logf("caught: %s", d[0].Detail)
		})
	}
}

// scriptedRunner starts an embedded tether wired as Run wires it (no
// faults, no plan), its volumes created, stopped at the test's end.
func scriptedRunner(t *testing.T, cfg Config) *runner {
	t.Helper()
	dir := t.TempDir()
	var restarts atomic.Int64
	var faulty *Faulty
	chk := &Checker{}
	ec := embeddedConfig(cfg, dir, &restarts, chk, &faulty)
	e, err := process.StartEmbedded(ec)
	if e != nil {
		t.Cleanup(func() {
			if err := finish(e, dir, process.CloudSim); err != nil {
				t.Error(err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: cfg, e: e, chk: chk, rep: &Report{}}
	if err := r.wire(faulty); err != nil {
		t.Fatal(err)
	}
	chk.Watch(e)
	if err := r.setup(); err != nil {
		t.Fatal(err)
	}
	return r
}
