package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/verify/bench"
)

// tether bench --distributed at a tiny shape, as a user runs it (the
// built binary, --json): both sides in one JSON object, every field
// present and sane (bench.CheckDistributedJSON), the shape's own figures
// right, a CPU profile of every member per phase written; and the check
// itself fails on output that breaks each of its rules.
func TestBenchDistributedJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, the cloud, 3 members and 4 agents")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd is not installed")
	}
	bin := binary(t)
	profiles := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "--distributed", "--volumes", "40", "--nodes", "4", "--json",
		"--dir", t.TempDir(), "--cpuprofile-members", profiles, "--phase-timeout", "2m")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tether bench --distributed: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.Bytes()
	if err := bench.CheckDistributedJSON(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res bench.DistResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Volumes != 40 || res.Nodes != 4 || res.Controllers != 3 || res.Embedded.Volumes != 40 || res.Embedded.Nodes != 4 {
		t.Errorf("shape %d volumes, %d nodes, %d controllers (embedded %d, %d): want 40, 4, 3", res.Volumes, res.Nodes, res.Controllers, res.Embedded.Volumes, res.Embedded.Nodes)
	}
	if res.Distributed.Dir != "" {
		t.Errorf("the fleet's directory %s was kept after a run that succeeded", res.Distributed.Dir)
	}
	byName := map[string]bench.DistPhase{}
	for _, p := range res.Distributed.Phases {
		byName[p.Name] = p
	}
	// Every volume attached once at the start and detached once at the
	// end, as the members counted their calls; every document asked its
	// store requests.
	if fs := byName["fleet_start"]; fs.CloudCalls["attach"] < 40 || fs.Documents != 80 || fs.StoreRequests.KV < 80 {
		t.Errorf("fleet_start: %d attach calls, %d documents, %d KV requests: want at least 40, exactly 80, at least 80", fs.CloudCalls["attach"], fs.Documents, fs.StoreRequests.KV)
	}
	if td := byName["teardown"]; td.CloudCalls["detach"] < 40 || td.Documents != 80 {
		t.Errorf("teardown: %d detach calls, %d documents: want at least 40, exactly 80", td.CloudCalls["detach"], td.Documents)
	}
	if v := byName["verify"]; v.Applicable {
		t.Errorf("verify applies distributed: %+v", v)
	}
	for _, p := range res.Distributed.Phases {
		for i := range 3 {
			f := filepath.Join(profiles, p.Name+".controller-"+string(rune('0'+i))+".pprof")
			if st, err := os.Stat(f); p.Applicable && (err != nil || st.Size() == 0) {
				t.Errorf("%s: no CPU profile of controller-%d: %v", p.Name, i, err)
			}
		}
	}

	// The check catches each rule broken.
	for _, c := range []struct {
		what    string
		breakIt func(m map[string]any)
		want    string
	}{
		{"a field left out", func(m map[string]any) { delete(phase(m, 0), "ratio_to_embedded") }, `lacks "ratio_to_embedded"`},
		{"a phase left out", func(m map[string]any) {
			d := m["distributed"].(map[string]any)
			d["phases"] = append(d["phases"].([]any)[:1], d["phases"].([]any)[2:]...)
		}, "5 phases"},
		{"a lease lapse", func(m map[string]any) { m["distributed"].(map[string]any)["lease_lapses"] = 1 }, "1 lease lapses"},
		{"no per-document figure", func(m map[string]any) {
			phase(m, 0)["store_requests"].(map[string]any)["per_document"] = nil
		}, "80 documents, but per_document"},
		{"no ratio", func(m map[string]any) { phase(m, 2)["ratio_to_embedded"] = nil }, "no ratio"},
		{"a member missing", func(m map[string]any) { phase(m, 0)["members"] = phase(m, 0)["members"].([]any)[:2] }, "2 members' figures, want 3"},
		{"no reason for a phase that does not apply", func(m map[string]any) { delete(phase(m, 1), "note") }, "does not say why"},
		{"no store requests", func(m map[string]any) { phase(m, 4)["store_requests"].(map[string]any)["total"] = 0 }, "store requests"},
		{"embedded side without a phase", func(m map[string]any) {
			e := m["embedded"].(map[string]any)
			e["phases"] = e["phases"].([]any)[1:]
		}, "embedded: 5 phases"},
	} {
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		c.breakIt(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := bench.CheckDistributedJSON(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: the check says %v, want an error with %q", c.what, err, c.want)
		}
	}
}

func phase(m map[string]any, i int) map[string]any {
	return m["distributed"].(map[string]any)["phases"].([]any)[i].(map[string]any)
}

// --distributed's flags: its own only with it, and the embedded side's
// that cannot apply across processes refused, naming the flag.
func TestBenchDistributedFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--controllers", "5"}, "--controllers 5: only with --distributed"},
		{[]string{"--cpuprofile-members", "."}, "--cpuprofile-members .: only with --distributed"},
		{[]string{"--distributed", "--mounter", "bind"}, "--mounter bind: not with --distributed"},
		{[]string{"--distributed", "--machines-dir", "."}, "--machines-dir .: not with --distributed"},
		{[]string{"--distributed", "--controllers", "10"}, "--controllers 10: want 1 to 9"},
		{[]string{"--distributed", "--nodes", "501"}, "--nodes 501: want 1 to 500"},
	} {
		cmd := benchCommand()
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		err := validateBench(cmd.Flags())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tether bench %v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	cmd := benchCommand()
	if err := cmd.ParseFlags([]string{"--distributed", "--controllers", "3", "--volumes", "40", "--nodes", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := validateBench(cmd.Flags()); err != nil {
		t.Errorf("a valid distributed bench refused: %v", err)
	}
	// Without a shape, --distributed's own: a process per node.
	cmd = benchCommand()
	if err := cmd.ParseFlags([]string{"--distributed"}); err != nil {
		t.Fatal(err)
	}
	if err := validateBench(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
	if v, n := cmd.Flags().Lookup("volumes").Value.String(), cmd.Flags().Lookup("nodes").Value.String(); v != distVolumes || n != distNodes {
		t.Errorf("--distributed's default shape: %s volumes over %s nodes, want %s over %s", v, n, distVolumes, distNodes)
	}
	// The attach limit the shape needs, unless given: 2,000 over 20 puts
	// 100 on each node and, in the churn, 100 more on node 1.
	if l := cmd.Flags().Lookup("attach-limit").Value.String(); l != "200" {
		t.Errorf("--distributed's attach limit for 2000 volumes over 20 nodes: %s, want 200", l)
	}
}
