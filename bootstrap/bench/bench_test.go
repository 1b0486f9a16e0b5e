package bench

import (
	"context"
	"encoding/json"
	"os"
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
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Phases []map[string]any `json:"phases"`
		Heap   *float64         `json:"heap_bytes_per_volume"`
		RSS    *float64         `json:"peak_rss_bytes"`
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
}

// Bad configurations are refused before anything starts.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no volumes", func(c *Config) { c.Volumes = 0 }},
		{"no nodes", func(c *Config) { c.Nodes = 0 }},
		{"over the attach limit", func(c *Config) { c.Volumes, c.Nodes = 1000, 10 }},
		{"negative latency", func(c *Config) { c.CloudLatency = -time.Second }},
		{"unknown mounter", func(c *Config) { c.Mounter = "nfs" }},
		{"short sync period", func(c *Config) { c.SyncPeriod = time.Millisecond }},
	} {
		cfg := DefaultConfig()
		tc.mod(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default refused: %v", err)
	}
}
