package process

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// startDurable starts a durable embedded tether on dir, as tether up does.
func startDurable(t *testing.T, dir string, rebuild bool) (*Embedded, error) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Durable, cfg.RebuildStore, cfg.Nodes = dir, true, rebuild, 2
	cfg.LogOutput, cfg.LogLevel = io.Discard, "warn"
	cfg.Controller.SyncPeriod = 100 * time.Millisecond
	return StartEmbedded(cfg)
}

// cleanupMounts unmounts what the agents left under dir (mounts outlive
// the process), even when the test fails.
func cleanupMounts(t *testing.T, dir string) {
	t.Cleanup(func() { teardownNodes(t, dir, mount.Default) })
}

// teardownNodes takes down, with the mounter mounterOf gives, whatever the
// agents left under dir/nodes.
func teardownNodes(t *testing.T, dir string, mounterOf func(layout.Layout) mount.Mounter) {
	nodes, _ := os.ReadDir(filepath.Join(dir, "nodes"))
	for _, d := range nodes {
		nd := filepath.Join(dir, "nodes", d.Name())
		l, err := layout.New(nd)
		if err != nil {
			continue
		}
		if err := agent.Teardown(nd, mounterOf(l)); err != nil {
			t.Errorf("teardown %s: %v", nd, err)
		}
	}
}

// world is the ground truth the tests compare: the cloud's attachments (from
// its state file) and the publish mounts on disk.
type world struct {
	attached map[cloud.VolumeID][]cloud.NodeName
	mounted  []string // paths of publish targets that are mounted
	detaches int
}

func readWorld(t *testing.T, dir string) world {
	t.Helper()
	cl, err := sim.Open(sim.Config{StatePath: filepath.Join(dir, "cloud-state.json")})
	if err != nil {
		t.Fatal(err)
	}
	w := world{attached: map[cloud.VolumeID][]cloud.NodeName{}}
	for _, v := range cl.Inventory().Volumes {
		if len(v.Attached) > 0 {
			w.attached[v.ID] = v.Attached
		}
	}
	w.detaches = cl.Calls().DetachNew
	nodes, _ := os.ReadDir(filepath.Join(dir, "nodes"))
	for _, d := range nodes {
		l, err := layout.New(filepath.Join(dir, "nodes", d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		found, err := mount.Scan(l, mount.Default(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range found.Entries {
			if e.Kind == mount.KindPublish && e.State == mount.Mounted {
				w.mounted = append(w.mounted, e.Path)
			}
		}
	}
	return w
}

func (w world) String() string {
	var b strings.Builder
	vols := make([]cloud.VolumeID, 0, len(w.attached))
	for v := range w.attached {
		vols = append(vols, v)
	}
	slices.Sort(vols)
	for _, v := range vols {
		ns := w.attached[v]
		b.WriteString(string(v) + "@")
		for _, n := range ns {
			b.WriteString(string(n) + " ")
		}
	}
	b.WriteString("| mounted: " + strings.Join(w.mounted, " "))
	return b.String()
}

// runningFleet starts tether on dir, runs two workloads until their
// volumes are attached and mounted, and stops it (mounts stay).
func runningFleet(t *testing.T, dir string) world {
	t.Helper()
	e, err := startDurable(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	ctl := e.Ctl()
	for _, v := range []cloud.VolumeID{"data-1", "data-2"} {
		if err := e.Cloud.CreateVolumeChecked(v, cloud.Exclusive); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ctl.ApplyAll([]controller.Change{
		{Volume: &store.VolumeSpec{ID: "data-1", Mode: cloud.Exclusive}},
		{Volume: &store.VolumeSpec{ID: "data-2", Mode: cloud.Exclusive}},
		{Workload: &store.Workload{UID: "app-1", Node: "n1", Volumes: []cloud.VolumeID{"data-1"}}},
		{Workload: &store.Workload{UID: "app-2", Node: "n2", Volumes: []cloud.VolumeID{"data-2"}, ReadOnly: []cloud.VolumeID{"data-2"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		n := 0
		for _, node := range []cloud.NodeName{"n1", "n2"} {
			st, err := ctl.AgentStatus(node, time.Second)
			if err != nil {
				return false
			}
			for _, m := range st.Mounts {
				if m.State == "Mounted" && m.WorkloadUid != "" {
					n++
				}
			}
		}
		return n == 2
	}, "both workloads mounted")
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	w := readWorld(t, dir)
	if len(w.attached) != 2 || len(w.mounted) != 2 {
		t.Fatalf("before the damage: want 2 attachments and 2 mounts, have %s", w)
	}
	return w
}

// A store that is missing, empty, corrupt or not this directory's is never
// taken as "the user wants nothing": the start refuses within seconds,
// naming the file and the recovery, and nothing is unmounted or detached.
// --rebuild-store then brings the desired state back from what runs.
func TestRestartWithUntrustedStore(t *testing.T) {
	dir := t.TempDir()
	cleanupMounts(t, dir)
	before := runningFleet(t, dir)
	db := filepath.Join(dir, StoreFile)
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	cloudState := filepath.Join(dir, "cloud-state.json")
	goodCloud, err := os.ReadFile(cloudState)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 1
	rng := rand.New(rand.NewPCG(seed, 1))
	foreign := filepath.Join(t.TempDir(), "foreign.db")
	if st, err := store.CreateBolt(foreign); err != nil {
		t.Fatal(err)
	} else {
		if err := st.SetIdentity(newIdentity()); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	foreignBytes, err := os.ReadFile(foreign)
	if err != nil {
		t.Fatal(err)
	}
	damage := []struct {
		name string
		do   func() error
		says string
	}{
		{"missing", func() error { return os.Remove(db) }, "is missing"},
		{"empty", func() error { return os.Truncate(db, 0) }, "is empty"},
		{"corrupt", func() error {
			// Every page but the two meta pages: the tree is surely hit
			// (a store this small has few pages in use).
			junk := make([]byte, len(good)-8<<10)
			for i := range junk {
				junk[i] = byte(rng.UintN(256))
			}
			f, err := os.OpenFile(db, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(junk, 8<<10)
			return err
		}, "is corrupt"},
		{"foreign", func() error { return os.WriteFile(db, foreignBytes, 0o600) }, "belongs to another tether"},
		{"no identity, untagged cloud, node directories of this one", func() error {
			// A store from before identities (or copied from one), next to
			// a cloud whose state lost its tag: the node directories know.
			if err := os.WriteFile(db, foreignBytes, 0o600); err != nil {
				return err
			}
			st, err := store.OpenBolt(db)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.SetIdentity(""); err != nil {
				return err
			}
			if err := st.PutVolume(store.VolumeSpec{ID: "other", Mode: cloud.Exclusive}); err != nil {
				return err
			}
			return untagCloud(dir)
		}, "node directory"},
		{"fresh", func() error {
			os.Remove(db)
			st, err := store.CreateBolt(db)
			if err != nil {
				return err
			}
			return st.Close()
		}, "has no identity"},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			if err := os.WriteFile(db, good, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cloudState, goodCloud, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := d.do(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			e, err := startDurable(t, dir, false)
			took := time.Since(start)
			if err == nil {
				e.Stop()
				t.Fatalf("started on a %s store (seed %d)", d.name, seed)
			}
			if !errors.Is(err, ErrUntrusted) {
				t.Fatalf("error does not match ErrUntrusted: %v", err)
			}
			for _, want := range []string{db, d.says, "--rebuild-store"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if took > 5*time.Second {
				t.Errorf("refusing took %s, want under 5s", took)
			}
			after := readWorld(t, dir)
			if after.String() != before.String() || after.detaches != before.detaches {
				t.Fatalf("a refused start changed the world (seed %d):\nbefore %s (%d detaches)\nafter  %s (%d detaches)", seed, before, before.detaches, after, after.detaches)
			}
		})
	}
	if t.Failed() {
		return
	}

	// The last damage left a store without data: rebuild.
	e, err := startDurable(t, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if e.Rebuilt == nil || e.Rebuilt.MovedAside == "" || e.Rebuilt.Workloads != 2 || e.Rebuilt.Volumes != 2 {
		t.Fatalf("rebuild report: %+v", e.Rebuilt)
	}
	if _, err := os.Stat(e.Rebuilt.MovedAside); err != nil {
		t.Fatalf("the old store was not kept: %v", err)
	}
	ctl := e.Ctl()
	for _, w := range []struct {
		uid  string
		node cloud.NodeName
		vol  cloud.VolumeID
	}{{"app-1", "n1", "data-1"}, {"app-2", "n2", "data-2"}} {
		got, ok, err := e.Store.Workload(w.uid)
		if err != nil || !ok || got.Node != w.node || len(got.Volumes) != 1 || got.Volumes[0] != w.vol {
			t.Fatalf("rebuilt workload %s: %+v %v %v", w.uid, got, ok, err)
		}
		// Bind mounts show read-only in the mount table (symlinks cannot).
		l, err := layout.New(e.NodeDir(w.node))
		if err != nil {
			t.Fatal(err)
		}
		if wantRO := w.uid == "app-2" && mount.Default(l).Name() == mount.NewBind(l).Name(); (len(got.ReadOnly) == 1) != wantRO {
			t.Errorf("rebuilt workload %s: read-only %v, want read-only=%v", w.uid, got.ReadOnly, wantRO)
		}
	}
	// The controller has settled on the rebuilt state (every volume
	// reported attached where its workload runs) and detached nothing.
	testkit.Eventually(t, 30*time.Second, func() bool {
		for _, v := range []cloud.VolumeID{"data-1", "data-2"} {
			st, err := ctl.VolumeStatus(v, time.Second)
			if err != nil || len(st.Attachments) != 1 || st.Attachments[0].State != "Attached" {
				return false
			}
		}
		return true
	}, "the rebuilt desired state reported attached")
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	after := readWorld(t, dir)
	if after.String() != before.String() || after.detaches != before.detaches {
		t.Fatalf("rebuild changed the world:\nbefore %s (%d detaches)\nafter  %s (%d detaches)", before, before.detaches, after, after.detaches)
	}
	// And the rebuilt store is trusted on the next start.
	e2, err := startDurable(t, dir, false)
	if err != nil {
		t.Fatalf("start after the rebuild: %v", err)
	}
	if err := e2.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A second start on a data directory that a running tether holds fails at
// once and touches nothing there: not the cloud's temporary files (whose
// removal broke the first one's writes), not the cloud's state, not the
// store; tether.lock present or not.
func TestSecondStartTouchesNothing(t *testing.T) {
	t.Run("lock file present", func(t *testing.T) { secondStartTouchesNothing(t, false) })
	t.Run("lock file removed", func(t *testing.T) { secondStartTouchesNothing(t, true) })
}

func secondStartTouchesNothing(t *testing.T, removeLock bool) {
	dir := t.TempDir()
	cleanupMounts(t, dir)
	e, err := startDurable(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	// As if the first one were in the middle of writing its cloud state.
	tmp := filepath.Join(dir, ".cloud-state.json.tmp-123")
	if err := os.WriteFile(tmp, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	lockBefore, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if removeLock {
		if err := os.Remove(filepath.Join(dir, LockFile)); err != nil {
			t.Fatal(err)
		}
		lockBefore = nil
	}
	stateBefore, err := os.Stat(filepath.Join(dir, simStateFile))
	if err != nil {
		t.Fatal(err)
	}
	dbBefore, err := os.Stat(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = startDurable(t, dir, false)
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second start: %v, want ErrDataDirInUse", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, LockFile)) {
		t.Errorf("error does not name the lock file: %v", err)
	}
	// The first one's files are as they were (it keeps writing some of
	// them, so these are the ones a second start would touch first).
	if b, err := os.ReadFile(tmp); err != nil || string(b) != "{}" {
		t.Errorf("the second start touched the first's temporary cloud state: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, LockFile)); (removeLock && !errors.Is(err, fs.ErrNotExist)) || (!removeLock && (err != nil || string(b) != string(lockBefore))) {
		t.Errorf("the second start rewrote the lock file: %q, was %q (%v)", b, lockBefore, err)
	}
	if st, err := os.Stat(filepath.Join(dir, simStateFile)); err != nil || !os.SameFile(stateBefore, st) || !st.ModTime().Equal(stateBefore.ModTime()) {
		t.Errorf("the second start rewrote the cloud's state (%v)", err)
	}
	if dbAfter, err := os.Stat(filepath.Join(dir, StoreFile)); err != nil || !os.SameFile(dbBefore, dbAfter) {
		t.Errorf("the second start replaced the store (%v)", err)
	}
	// The first one still works: a cloud write (temp file and rename).
	if err := e.Cloud.CreateVolumeChecked("after", cloud.Exclusive); err != nil {
		t.Fatalf("the first tether broke: %v", err)
	}
}

// untagCloud removes the owner tag from the sim cloud's state file.
func untagCloud(dir string) error {
	cl, err := sim.Open(sim.Config{StatePath: filepath.Join(dir, "cloud-state.json")})
	if err != nil {
		return err
	}
	return cl.SetTag("")
}
