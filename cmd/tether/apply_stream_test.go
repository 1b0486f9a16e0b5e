package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/process"
)

// startTether starts a durable embedded tether without nodes (an apply
// brings its own, which no agent serves: nothing mounts) and its API on
// loopback, both stopped at the end of the test. It returns the client
// flags that reach it.
func startTether(t testing.TB) []string {
	t.Helper()
	cfg := process.DefaultConfig()
	cfg.DataDir, cfg.Nodes, cfg.Durable = t.TempDir(), 0, true
	cfg.LogOutput, cfg.LogLevel = io.Discard, "error"
	e, err := process.StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token, err := api.LoadOrCreateToken(cfg.DataDir)
	if err != nil {
		e.Stop()
		t.Fatal(err)
	}
	srv, err := api.Serve("127.0.0.1:0", token, e.Controller, e.Cloud, false)
	if err != nil {
		e.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	return []string{"--addr", srv.Addr(), "--token", token}
}

// fleetYAML writes nodes nodes, vols volumes and a workload per volume as
// YAML documents, names padded to pad bytes, and returns the file and
// every object's kind/name.
func fleetYAML(t testing.TB, nodes, vols, pad int) (string, map[string]bool) {
	t.Helper()
	var b strings.Builder
	want := map[string]bool{}
	name := func(prefix string, i int) string {
		return fmt.Sprintf("%s-%0*d", prefix, max(pad-len(prefix)-1, 6), i)
	}
	for i := range nodes {
		n := name("node", i)
		fmt.Fprintf(&b, "---\nkind: Node\nname: %s\n", n)
		want["node/"+n] = true
	}
	for i := range vols {
		v, w := name("vol", i), name("wl", i)
		fmt.Fprintf(&b, "---\nkind: Volume\nname: %s\n---\nkind: Workload\nname: %s\nnode: %s\nvolumes:\n  - name: %s\n", v, w, name("node", i%nodes), v)
		want["volume/"+v], want["workload/"+w] = true, true
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, want
}

// getAll lists kind with tether get -o json, following every page, and
// returns kind/name of each object listed.
func getAll(t testing.TB, client []string, kind string) map[string]bool {
	t.Helper()
	code, out := execute("", append([]string{"get", kind + "s", "-o", "json", "--timeout", "2m"}, client...)...)
	if code != 0 {
		t.Fatalf("get %ss: exit %d: %.500s", kind, code, out)
	}
	var res struct {
		Volumes, Nodes, Workloads []struct {
			Spec struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("get %ss -o json: %v", kind, err)
	}
	got := map[string]bool{}
	for _, l := range [][]struct{ Spec struct{ Name string } }{res.Volumes, res.Nodes, res.Workloads} {
		for _, o := range l {
			got[kind+"/"+o.Spec.Name] = true
		}
	}
	return got
}

// wantListed fails unless get lists exactly the objects of want.
func wantListed(t testing.TB, client []string, want map[string]bool) {
	t.Helper()
	got := map[string]bool{}
	for _, kind := range []string{"volume", "node", "workload"} {
		for k := range getAll(t, client, kind) {
			got[k] = true
		}
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("%s applied but not listed by get (%d listed, %d applied)", k, len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("get lists %d objects, %d applied", len(got), len(want))
	}
}

// An apply of 7,000 documents, past what one request takes, through the
// real server: sent as a stream, summarized in one line, and every object
// is listed by get afterwards.
func TestApplyPastOneRequest(t *testing.T) {
	client := startTether(t)
	file, want := fleetYAML(t, 10, 3500, 110)
	in, err := readInputs([]string{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if size := in.batch.Size(); size <= api.MaxRequestBytes {
		t.Fatalf("the apply is %d bytes: want more than one request takes", size)
	}
	code, out := execute("", append([]string{"apply", "-f", file, "--timeout", "2m"}, client...)...)
	if code != 0 {
		t.Fatalf("apply: exit %d: %.2000s", code, out)
	}
	if wantOut := "7010 documents applied: 3500 volumes created, 10 nodes created, 3500 workloads created\n"; out != wantOut {
		t.Fatalf("apply printed %.2000q, want %q", out, wantOut)
	}
	wantListed(t, client, want)
	// Applied again, nothing changes.
	code, out = execute("", append([]string{"apply", "-f", file, "--timeout", "2m"}, client...)...)
	if wantOut := "7010 documents applied: 3500 volumes unchanged, 10 nodes unchanged, 3500 workloads unchanged\n"; code != 0 || out != wantOut {
		t.Fatalf("apply again: exit %d, printed %.2000q, want %q", code, out, wantOut)
	}
}

// An apply the server refuses applies nothing, whatever its size: one
// workload naming an unknown node, last of 7,001 documents.
func TestApplyStreamRefusedAppliesNothing(t *testing.T) {
	client := startTether(t)
	file, _ := fleetYAML(t, 10, 3500, 110)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "---\nkind: Workload\nname: stray\nnode: nowhere\n")
	f.Close()
	code, out := execute("", append([]string{"apply", "-f", file, "--timeout", "2m"}, client...)...)
	if code != 1 || !strings.Contains(out, `InvalidArgument: `+file+`: document 7011 (line 31532): controller: invalid request: workload "stray" names unknown node "nowhere"`) {
		t.Fatalf("apply: exit %d: %.2000s", code, out)
	}
	wantListed(t, client, map[string]bool{})
}

// TestApplyAtScale applies 100,000 volumes and 100,000 workloads over
// 10,000 nodes with tether apply through the real server, then lists them
// with tether get. A measurement, not part of the default suite:
//
//	TETHER_SCALE=1 go test -run TestApplyAtScale -v -timeout 60m ./cmd/tether
func TestApplyAtScale(t *testing.T) {
	if os.Getenv("TETHER_SCALE") == "" {
		t.Skip("set TETHER_SCALE=1 to apply 210,000 documents")
	}
	client := startTether(t)
	t0 := time.Now()
	file, want := fleetYAML(t, 10000, 100000, 0)
	st, _ := os.Stat(file)
	t.Logf("wrote %d bytes of YAML: %s", st.Size(), time.Since(t0))
	t0 = time.Now()
	in, err := readInputs([]string{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("parsed %d documents (%d bytes encoded): %s", in.batch.Len(), in.batch.Size(), time.Since(t0))
	t0 = time.Now()
	code, out := execute("", append([]string{"apply", "-f", file, "--timeout", "60m"}, client...)...)
	if code != 0 {
		t.Fatalf("apply: exit %d: %.2000s", code, out)
	}
	t.Logf("tether apply, end to end: %s: %s", time.Since(t0), strings.TrimSpace(out))
	t0 = time.Now()
	wantListed(t, client, want)
	t.Logf("tether get of every kind: %s", time.Since(t0))
}
