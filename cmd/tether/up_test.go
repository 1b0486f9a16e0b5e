package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/tether once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tether-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tether")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// syncBuffer is safe for a child's output goroutines and the test at once.
type syncBuffer = testkit.Buffer

// metricsURL finds the metrics address tether up printed.
func metricsURL(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "metrics" {
			return strings.TrimSuffix(f[1], "/metrics")
		}
	}
	return ""
}

// tetherUp starts `tether up` on data and waits until its API answers.
func tetherUp(t *testing.T, data string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	os.Remove(filepath.Join(data, process.AddrFile))
	cmd := exec.Command(binary(t), "up", "--data-dir", data, "--api-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--sync-period", "1s", "--cloud-timeout", "5s", "--sim-latency", "30ms", "--sim-throttle", "8", "--log-level", "warn")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("tether up output:\n%s", out.String())
		}
	})
	testkit.Eventually(t, 20*time.Second, func() bool {
		_, err := run(t, data, "get", "nodes")
		return err == nil
	}, "tether up answering")
	return cmd, out
}

// run runs a tether client command against data.
func run(t *testing.T, data string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary(t), append(args, "--data-dir", data, "--timeout", "5s")...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

type volumesJSON struct {
	Volumes []struct {
		Spec        struct{ Name string }
		Attachments []struct{ Node, State string }
	}
}

func attachedCount(t *testing.T, data string) int {
	out, err := run(t, data, "get", "volumes", "-o", "json")
	if err != nil {
		return -1
	}
	var v volumesJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("get volumes -o json: %v\n%s", err, out)
	}
	n := 0
	for _, vol := range v.Volumes {
		for _, a := range vol.Attachments {
			if a.State == "Attached" {
				n++
			}
		}
	}
	return n
}

func running(t *testing.T, data string) (int, int) {
	out, err := run(t, data, "get", "workloads", "-o", "json")
	if err != nil {
		return -1, -1
	}
	var w struct{ Workloads []struct{ Phase string } }
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("get workloads -o json: %v\n%s", err, out)
	}
	n := 0
	for _, x := range w.Workloads {
		if x.Phase == "Running" {
			n++
		}
	}
	return n, len(w.Workloads)
}

// SIGKILL in the middle of attaching, then start again: no desired state
// lost, nothing attached twice, everything converges.
func TestUpSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	data := t.TempDir()
	t.Cleanup(func() { teardown(t, data) })
	up, _ := tetherUp(t, data)
	const n = 12
	var spec strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&spec, "kind: Volume\nname: v%02d\n---\nkind: Workload\nname: w%02d\nnode: n%d\nvolumes:\n  - name: v%02d\n---\n", i, i, 1+i%3, i)
	}
	file := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(file, []byte(spec.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, data, "apply", "-f", file); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	// The sim throttles the cloud to 8 calls/s: attaching takes a while,
	// and tether is killed in the middle of it.
	var before int
	testkit.Eventually(t, 20*time.Second, func() bool { before = attachedCount(t, data); return before > 0 }, "some volumes attached")
	if err := up.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.Wait()
	if before >= n {
		t.Fatalf("all %d volumes were attached before the kill: the test did not kill mid-attach", before)
	}
	t.Logf("killed with %d of %d volumes attached", before, n)

	up, out := tetherUp(t, data)
	t.Cleanup(func() {
		if t.Failed() {
			for _, kind := range []string{"volumes", "workloads", "nodes"} {
				out, _ := run(t, data, "get", kind)
				t.Logf("tether get %s:\n%s", kind, out)
			}
		}
	})
	testkit.Eventually(t, 60*time.Second, func() bool {
		r, total := running(t, data)
		return total == n && r == n
	}, "all workloads running after the restart")
	// Mounts come back from disk at once; the volume actors confirm their
	// attachments with the cloud just after.
	testkit.Eventually(t, 30*time.Second, func() bool { return attachedCount(t, data) == n }, "every volume attached where wanted")
	c := readCounters(t, data)
	if c.AttachNew != n || c.DetachNew != 0 {
		t.Fatalf("cloud made %d attachments and removed %d; want %d and 0 (nothing attached twice)", c.AttachNew, c.DetachNew, n)
	}
	checkMetrics(t, metricsURL(out.String()))
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
}

func TestExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	data := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"get"}, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"get", "volumes", "--bogus"}, 2},
		{[]string{"get", "volumes", "-o", "yaml"}, 2},
		{[]string{"get", "volumes"}, 1}, // nothing running there
		{[]string{"apply", "-f", filepath.Join(data, "missing.yaml")}, 1},
	} {
		_, err := run(t, data, tt.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tt.code {
			t.Errorf("tether %v: %v, want exit %d", tt.args, err, tt.code)
		}
	}
}

// teardown unmounts what the agents left (mounts outlive the process).
func teardown(t *testing.T, data string) {
	nodes, _ := os.ReadDir(filepath.Join(data, "nodes"))
	for _, d := range nodes {
		dir := filepath.Join(data, "nodes", d.Name())
		l, err := layout.New(dir)
		if err != nil {
			continue
		}
		if err := agent.Teardown(dir, mount.Default(l)); err != nil {
			t.Errorf("teardown %s: %v", dir, err)
		}
	}
}

type cloudCounters struct {
	AttachNew int `json:"attach_new"`
	DetachNew int `json:"detach_new"`
}

// readCounters reads the sim cloud's counters from its state file (written
// atomically by rename, so a read never sees half a file).
func readCounters(t *testing.T, data string) cloudCounters {
	t.Helper()
	// The snapshot and its log, read without writing (tether still runs).
	c, err := sim.ReadCounters(filepath.Join(data, "cloud-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return cloudCounters{AttachNew: c.AttachNew, DetachNew: c.DetachNew}
}

// checkMetrics: the endpoint serves tether's and Proto.Actor's metrics and
// says it is healthy and ready.
func checkMetrics(t *testing.T, base string) {
	t.Helper()
	if base == "" {
		t.Fatal("tether up did not print its metrics address")
	}
	for path, want := range map[string]string{
		"/metrics": "tether_operations_total",
		"/healthz": "ok",
		"/readyz":  "ready",
	} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d, body lacks %q", path, res.StatusCode, want)
		}
		if path == "/metrics" {
			for _, m := range []string{"tether_cloud_calls_total", "tether_attachments", "protoactor_", "tether_sync_pass_seconds"} {
				if !strings.Contains(string(body), m) {
					t.Errorf("/metrics lacks %s", m)
				}
			}
			// The store's own counts: bbolt's transactions, some of each
			// by now (the start wrote and read the store).
			for _, op := range []string{"view", "update"} {
				if m := regexp.MustCompile(`(?m)^tether_store_requests_total\{op="` + op + `"\} ([0-9.e+]+)$`).FindStringSubmatch(string(body)); m == nil || m[1] == "0" {
					t.Errorf("/metrics: tether_store_requests_total{op=%q} missing or 0 (%v)", op, m)
				}
			}
		}
	}
}
