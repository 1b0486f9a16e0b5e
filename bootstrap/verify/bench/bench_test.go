package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// A small run goes through every phase, reports each with its counts, and
// leaves nothing behind.
func TestRunSmallFleet(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	cfg := DefaultConfig()
	cfg.Volumes, cfg.Nodes, cfg.SyncPeriod, cfg.PhaseTimeout = 60, 6, time.Second, time.Minute
	cfg.Dir = t.TempDir()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(cfg.Dir); len(left) > 0 {
		t.Errorf("the run left %d entries in %s (%s first)", len(left), cfg.Dir, left[0].Name())
	}
	names := []string{"fleet_start", "verify", "restart", "node_loss", "churn", "teardown"}
	if len(res.Phases) != len(names) {
		t.Fatalf("%d phases, want %v", len(res.Phases), names)
	}
	for i, p := range res.Phases {
		if p.Name != names[i] {
			t.Errorf("phase %d is %q, want %q", i, p.Name, names[i])
		}
		if p.Seconds <= 0 {
			t.Errorf("%s: %v seconds", p.Name, p.Seconds)
		}
	}
	start := res.Phases[0]
	if start.CloudCalls["attach"] != cfg.Volumes || start.Messages == 0 || start.Fsyncs == 0 || start.BaselineRatio <= 0 {
		t.Errorf("fleet start: %+v; want %d attaches, messages, fsyncs and a baseline ratio", start, cfg.Volumes)
	}
	// The pass's own count (a periodic pass may add calls to the phase's).
	if p := res.Phases[1]; p.CloudCalls["instance_volumes"] < 1 || !strings.Contains(p.Note, "in 1 calls") {
		t.Errorf("verify of %d nodes with batch %d: %v, %q; want one call", cfg.Nodes, res.BatchSize, p.CloudCalls, p.Note)
	}
	if got := res.Phases[2].CloudCalls; got["attach"]+got["detach"] != 0 || got["volumes_are_attached"] != 1 {
		t.Errorf("restart made %v; want one verify call and no attach or detach", got)
	}
	if got := res.Phases[5].CloudCalls["detach"]; got != cfg.Volumes {
		t.Errorf("teardown made %d detaches, want %d", got, cfg.Volumes)
	}
	if res.HeapBytesPerVolume == 0 || res.PeakRSSBytes <= 0 || res.BaselineSeconds <= 0 {
		t.Errorf("heap %v, rss %v, baseline %v: want all measured", res.HeapBytesPerVolume, res.PeakRSSBytes, res.BaselineSeconds)
	}
	// Every volume was staged, published, unpublished and unstaged at
	// least once: each operation ran, and none costs nothing (the
	// symlink mounter's, tree_linux.go: 2, 5, 7 and 2 on a node with
	// work; a node's first and last volume cost more).
	for _, op := range []string{"stage", "publish", "unpublish", "unstage"} {
		if n := res.SyscallsPerOp[op]; n < 1 || n > 20 {
			t.Errorf("%s: %v system calls per operation, want 1 to 20", op, n)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Phases []map[string]any    `json:"phases"`
		Heap   *float64            `json:"heap_bytes_per_volume"`
		RSS    *float64            `json:"peak_rss_bytes"`
		Sys    map[string]*float64 `json:"syscalls_per_op"`
	}
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, p := range generic.Phases {
		for _, k := range []string{"name", "seconds", "messages", "cloud_calls", "fsyncs", "baseline_ratio"} {
			if _, ok := p[k]; !ok {
				t.Errorf("phase %v lacks %q in JSON", p["name"], k)
			}
		}
	}
	if generic.Heap == nil || generic.RSS == nil {
		t.Errorf("JSON lacks heap_bytes_per_volume or peak_rss_bytes: %s", b)
	}
	for _, op := range []string{"stage", "publish", "unpublish", "unstage"} {
		if generic.Sys[op] == nil {
			t.Errorf("JSON lacks syscalls_per_op.%s: %s", op, b)
		}
	}
}

// Bad configurations are refused before anything starts, naming what is
// wrong; the attach limit is the configured one (0: the sim's default).
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // "": accepted
	}{
		{"default", func(*Config) {}, ""},
		{"no volumes", func(c *Config) { c.Volumes = 0 }, "--volumes 0"},
		{"no nodes", func(c *Config) { c.Nodes = 0 }, "--nodes 0"},
		{"over the attach limit", func(c *Config) { c.Volumes, c.Nodes = 1000, 10 },
			"1000 volumes over 10 nodes put up to 200 on one node (its share, and during the churn phase the volumes moving onto it), more than the attach limit 39: give more nodes, or --attach-limit 200"},
		// 38 a node fits 39, but node 1 takes all of node 0's in the churn.
		{"churn over the default limit", func(c *Config) { c.Volumes, c.Nodes = 380, 10 }, "put up to 76 on one node"},
		{"churn within a given limit", func(c *Config) { c.Volumes, c.Nodes, c.AttachLimit = 380, 10, 76 }, ""},
		{"a given limit one short", func(c *Config) { c.Volumes, c.Nodes, c.AttachLimit = 10000, 100, 199 }, "more than the attach limit 199: give more nodes, or --attach-limit 200"},
		{"a given limit that fits", func(c *Config) { c.Volumes, c.Nodes, c.AttachLimit = 10000, 100, 200 }, ""},
		{"a given limit below the default", func(c *Config) { c.AttachLimit = 19 }, "more than the attach limit 19"},
		{"a given limit at the default's need", func(c *Config) { c.AttachLimit = 20 }, ""},
		{"the largest limit", func(c *Config) { c.AttachLimit = MaxAttachLimit }, ""},
		{"a negative limit", func(c *Config) { c.AttachLimit = -1 }, "--attach-limit -1: want 1 to 100000"},
		{"a limit over the bound", func(c *Config) { c.AttachLimit = MaxAttachLimit + 1 }, "--attach-limit 100001: want 1 to 100000"},
		{"negative latency", func(c *Config) { c.CloudLatency = -time.Second }, "--cloud-latency -1s"},
		{"unknown mounter", func(c *Config) { c.Mounter = "nfs" }, `--mounter "nfs"`},
		{"short sync period", func(c *Config) { c.SyncPeriod = time.Millisecond }, "--sync-period 1ms"},
	} {
		cfg := DefaultConfig()
		tc.mod(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted, want %q", tc.name, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// PeakPerNode is the most volumes one node holds at once: its share, and
// the volumes the churn moves onto it.
func TestPeakPerNode(t *testing.T) {
	for _, tc := range []struct{ volumes, nodes, want int }{
		{10000, 1000, 20}, // 10 each; node 1 takes node 0's 10
		{10000, 100, 200}, // 100 each; node 1 takes node 0's 100
		{380, 10, 76},
		{10000, 270, 76}, // node 0 has 38, all tenth workloads (270 is a multiple of 10): onto node 1's 38
		{10000, 271, 41},
		{5, 1, 5}, // the churn moves nothing: the next node is the same one
		{3, 10, 2},
		{0, 10, 0},
	} {
		if got := PeakPerNode(tc.volumes, tc.nodes); got != tc.want {
			t.Errorf("PeakPerNode(%d, %d) = %d, want %d", tc.volumes, tc.nodes, got, tc.want)
		}
	}
}

// progressFunc hears each progress line.
type progressFunc func(line string)

func (f progressFunc) Write(b []byte) (int, error) { f(string(b)); return len(b), nil }

// With MachinesDir, the nodes' mounts and the sim volumes' contents are
// made there while the store and the cloud's state stay in the data
// directory; both are removed at the end.
func TestRunMachinesApart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Volumes, cfg.Nodes, cfg.SyncPeriod, cfg.PhaseTimeout = 20, 2, time.Second, time.Minute
	cfg.Dir, cfg.MachinesDir = t.TempDir(), t.TempDir()
	checked := false
	cfg.Progress = progressFunc(func(line string) {
		if line != "bench: verify...\n" {
			return
		}
		checked = true // after the fleet start: every volume mounted
		data, _ := filepath.Glob(filepath.Join(cfg.Dir, "*", "*"))
		for _, p := range data {
			if b := filepath.Base(p); b == "nodes" || b == "cloud" {
				t.Errorf("the data directory holds %s", p)
			}
		}
		if got, _ := filepath.Glob(filepath.Join(cfg.Dir, "*", "tether.db")); len(got) != 1 {
			t.Errorf("the data directory holds %d stores, want 1", len(got))
		}
		if got, _ := filepath.Glob(filepath.Join(cfg.MachinesDir, "*", "cloud", "v*")); len(got) != cfg.Volumes {
			t.Errorf("%d volume contents in the machines' directory, want %d", len(got), cfg.Volumes)
		}
		if got, _ := filepath.Glob(filepath.Join(cfg.MachinesDir, "*", "nodes", "*", "pods", "*")); len(got) != cfg.Volumes {
			t.Errorf("%d pod directories in the machines' directory, want %d", len(got), cfg.Volumes)
		}
	})
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !checked || !res.MachinesApart {
		t.Errorf("checked during the run %v, result says apart %v: want both", checked, res.MachinesApart)
	}
	for _, d := range []string{cfg.Dir, cfg.MachinesDir} {
		if left, _ := os.ReadDir(d); len(left) > 0 {
			t.Errorf("the run left %d entries in %s (%s first)", len(left), d, left[0].Name())
		}
	}
}

// TestRunMemoryMounter: with --mounter memory every phase runs the agents'
// logic over the in-memory tables: nothing is mounted on disk, no mount
// system call is made, and the restart finds every mount in the tables
// (it asks for none), as it finds them on disk with the real mounters.
func TestRunMemoryMounter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	cfg := DefaultConfig()
	cfg.Volumes, cfg.Nodes, cfg.SyncPeriod, cfg.PhaseTimeout, cfg.Mounter = 60, 6, time.Second, time.Minute, "memory"
	cfg.Dir = t.TempDir()
	checked := false
	cfg.Progress = progressFunc(func(line string) {
		if line != "bench: verify...\n" {
			return
		}
		checked = true // after the fleet start: every volume mounted, in memory
		if got, _ := filepath.Glob(filepath.Join(cfg.Dir, "*", "nodes", "*", "p*", "*")); len(got) != 0 {
			t.Errorf("%d mount directories on disk (%s first), want none", len(got), got[0])
		}
		if got, _ := filepath.Glob(filepath.Join(cfg.Dir, "*", "cloud", "v*")); len(got) != 0 {
			t.Errorf("%d volume contents on disk (%s first), want none: the memory mounter never reads them", len(got), got[0])
		}
		if got, _ := filepath.Glob(filepath.Join(cfg.Dir, "*", "tether.db")); len(got) != 1 {
			t.Errorf("%d stores on disk, want 1", len(got))
		}
	})
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !checked || res.Mounter != "memory" {
		t.Fatalf("checked %v, mounter %q", checked, res.Mounter)
	}
	mounts := map[string]int64{}
	for _, p := range res.Phases {
		mounts[p.Name] = p.Mounts
	}
	// Each volume staged and published once (a retry would add some).
	if mounts["fleet_start"] < int64(2*cfg.Volumes) || mounts["restart"] != 0 || mounts["churn"] < int64(2*cfg.Volumes/10) {
		t.Errorf("mounts asked for by phase: %v; want at least 2 a volume at the fleet start, none at the restart, 2 a moved volume in the churn", mounts)
	}
	for op, n := range res.SyscallsPerOp {
		if n != 0 {
			t.Errorf("%s: %v system calls per operation, want 0 with the memory mounter", op, n)
		}
	}
	if got := res.Phases[5].CloudCalls["detach"]; got != cfg.Volumes {
		t.Errorf("teardown made %d detaches, want %d", got, cfg.Volumes)
	}
	if left, _ := os.ReadDir(cfg.Dir); len(left) > 0 {
		t.Errorf("the run left %d entries in %s", len(left), cfg.Dir)
	}
}
