package process

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// startApart starts a durable embedded tether on dir whose nodes' and sim
// volumes' directories are under apart.
func startApart(t *testing.T, dir, apart string) (*Embedded, error) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Durable, cfg.Nodes = dir, true, 2
	cfg.NodesDir, cfg.Sim.ContentDir = filepath.Join(apart, "nodes"), filepath.Join(apart, "cloud")
	cfg.LogOutput, cfg.LogLevel = io.Discard, "warn"
	cfg.Controller.SyncPeriod = 100 * time.Millisecond
	cfg.NewMounter = mount.NewSymlink
	return StartEmbedded(cfg)
}

// With NodesDir and Sim.ContentDir set, the agents mount and the sim keeps
// volume contents there, nothing of it lands in the data directory, and
// the start-up checks read the node directories where they are.
func TestNodesDirApart(t *testing.T) {
	dir, apart := t.TempDir(), t.TempDir()
	e, err := startApart(t, dir, apart)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			e.Stop()
		}
	})
	e.Cloud.CreateVolume("v1", cloud.Exclusive)
	if _, err := e.Ctl().ApplyAll([]controller.Change{
		{Volume: &store.VolumeSpec{ID: "v1", Mode: cloud.Exclusive}},
		{Workload: &store.Workload{UID: "w1", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	l, err := layout.New(filepath.Join(apart, "nodes", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	target, err := l.PodVolume("w1", e.Plugin(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	m := mount.NewSymlink(l)
	testkit.Eventually(t, 10*time.Second, func() bool {
		st, _, err := m.Inspect(target)
		return err == nil && st == mount.Mounted
	}, "v1 mounted for w1 under the nodes directory")
	if fi, err := os.Stat(filepath.Join(apart, "cloud", "v1")); err != nil || !fi.IsDir() {
		t.Errorf("v1's content directory under %s: %v", apart, err)
	}
	for _, name := range []string{"nodes", "cloud"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the data directory holds %s (%v), want it apart", name, err)
		}
	}
	stopped = true
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}

	// Without its store, the start refuses, naming the node directories
	// it found apart.
	if err := os.Rename(filepath.Join(dir, StoreFile), filepath.Join(apart, "kept.db")); err != nil {
		t.Fatal(err)
	}
	if e2, err := startApart(t, dir, apart); err == nil {
		e2.Stop()
		t.Fatal("started without its store")
	} else if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "2 node directories hold 2 volume mount directories") {
		t.Fatalf("refusal %v; want ErrUntrusted naming 2 node directories holding 2 mount directories", err)
	}

	// With it back, the restart finds v1 mounted and keeps it so.
	if err := os.Rename(filepath.Join(apart, "kept.db"), filepath.Join(dir, StoreFile)); err != nil {
		t.Fatal(err)
	}
	e3, err := startApart(t, dir, apart)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e3.Stop() })
	testkit.Eventually(t, 10*time.Second, func() bool {
		st, err := e3.Agents["n1"].Status(time.Second)
		return e3.Ctl().Restored() && err == nil && st.Ready
	}, "the controller restored and n1's agent ready")
	if st, _, err := m.Inspect(target); err != nil || st != mount.Mounted {
		t.Fatalf("after the restart v1 is %v (%v), want mounted", st, err)
	}
}

// A directory set apart must be absolute, clean and not the root.
func TestNodesDirRefused(t *testing.T) {
	for _, bad := range []string{"relative/nodes", "/", "/tmp/../x", "/tmp/x/"} {
		cfg := DefaultConfig()
		cfg.DataDir, cfg.NodesDir, cfg.LogOutput = t.TempDir(), bad, io.Discard
		if e, err := StartEmbedded(cfg); err == nil {
			e.Stop()
			t.Errorf("NodesDir %q: started", bad)
		} else if !strings.Contains(err.Error(), "nodes directory") || !strings.Contains(err.Error(), bad) {
			t.Errorf("NodesDir %q: error %v does not name it", bad, err)
		}
		cfg.NodesDir, cfg.Sim.ContentDir = "", bad
		if e, err := StartEmbedded(cfg); err == nil {
			e.Stop()
			t.Errorf("Sim.ContentDir %q: started", bad)
		} else if !strings.Contains(err.Error(), "content directory") {
			t.Errorf("Sim.ContentDir %q: error %v does not name it", bad, err)
		}
	}
}
