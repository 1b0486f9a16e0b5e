package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/cloud/testkit"
)

// sockets makes a listening unix socket and a regular file, both closed
// at cleanup.
func sockets(t *testing.T) (socket, file string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "csiflag")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, file = filepath.Join(dir, "s.sock"), filepath.Join(dir, "file")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return socket, file
}

// Both CSI sockets or neither; nothing of another cloud with them;
// --nodes 1 if given; a path there must be a socket. Each refusal is a
// usage error naming the flag, and exits 2 before anything starts.
func TestCSIFlags(t *testing.T) {
	sock, file := sockets(t)
	missing := filepath.Join(filepath.Dir(sock), "later.sock") // waited for
	both := []string{"--csi-controller-socket", sock, "--csi-node-socket", sock}
	for _, tt := range []struct {
		args []string
		want string // "": accepted
	}{
		{both, ""},
		{[]string{"--csi-controller-socket", sock, "--csi-node-socket", missing}, ""},
		{append(slices.Clone(both), "--nodes", "1"), ""},
		{[]string{"--csi-controller-socket", sock}, "--csi-controller-socket " + sock + ": needs --csi-node-socket too"},
		{[]string{"--csi-node-socket", sock}, "--csi-node-socket " + sock + ": needs --csi-controller-socket too"},
		{[]string{"--csi-controller-socket", file, "--csi-node-socket", sock}, "--csi-controller-socket " + file + ": is not a unix socket"},
		{[]string{"--csi-controller-socket", sock, "--csi-node-socket", ""}, `--csi-node-socket "": want the path of a unix socket`},
		{append(slices.Clone(both), "--cloud", "loop"), "--cloud loop: applies to the sim or loop cloud, not with --csi-controller-socket"},
		{append(slices.Clone(both), "--cloud", "sim"), "--cloud sim: applies to the sim or loop cloud"},
		{append(slices.Clone(both), "--loop-volume-size", "1GiB"), "--loop-volume-size 1GiB: applies to the sim or loop cloud"},
		{append(slices.Clone(both), "--sim-latency", "1ms"), "--sim-latency 1ms: applies to the sim or loop cloud"},
		{append(slices.Clone(both), "--sim-throttle", "5"), "--sim-throttle 5: applies"},
		{append(slices.Clone(both), "--sim-attach-limit", "3"), "--sim-attach-limit 3: applies"},
		{append(slices.Clone(both), "--nodes", "3"), "--nodes 3: want 1 with --csi-node-socket given 1 times"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := upCommand()
			if err := cmd.Flags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg := process.DefaultConfig()
			csi, err := (&validator{fs: cmd.Flags()}).checkCSI(&cfg)
			if tt.want == "" {
				if err != nil || !csi || cfg.Cloud != process.CloudCSI || cfg.Nodes != 1 {
					t.Fatalf("checkCSI = %v, %v; cloud %q, %d nodes; want a CSI tether of one node", csi, err, cfg.Cloud, cfg.Nodes)
				}
				return
			}
			var u usageError
			if !asUsage(err, &u) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a usage error with %q", err, tt.want)
			}
			// The data directory given cannot be made: a command that got
			// past its flags would exit 1.
			code, out := execute("", append([]string{"up", "--data-dir", "/dev/null/tether"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(out, tt.want) {
				t.Errorf("tether up %s: exit %d, %q; want exit 2 with %q", strings.Join(tt.args, " "), code, out, tt.want)
			}
		})
	}
	cmd := upCommand()
	if csi, err := (&validator{fs: cmd.Flags()}).checkCSI(new(process.Config)); csi || err != nil {
		t.Errorf("no CSI flags: %v, %v; want the other clouds' checks", csi, err)
	}
	t.Setenv("TETHER_CSI_NODE_SOCKET", sock)
	code, out := execute("", "up", "--data-dir", "/dev/null/tether", "--csi-controller-socket", sock, "--sim-latency", "1ms")
	if code != exitUsage || !strings.Contains(out, "--sim-latency 1ms: applies to the sim or loop cloud") {
		t.Errorf("TETHER_CSI_NODE_SOCKET with --sim-latency: exit %d, %q; want exit 2", code, out)
	}
}

func asUsage(err error, u *usageError) bool {
	v, ok := err.(usageError)
	*u = v
	return ok
}

// tether up on the fake CSI driver, as an operator runs it: a volume the
// driver lacks is refused, one it has is published, staged and published
// at the workload's path, get shows it, the node's instance is the
// plugin's node ID, and instance administration is refused.
func TestUpCSI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	d := csitest.New(csitest.Config{Nodes: map[string]int64{"node-1": 8}, List: true, ListPublished: true, StageUnstage: true})
	ctl, nd := d.Serve(t, ""), d.Serve(t, "node-1")
	data := t.TempDir()
	os.Remove(filepath.Join(data, process.AddrFile))
	up, out := startUpCSI(t, data, ctl, nd, "warn")
	sh := func(args ...string) string {
		t.Helper()
		o, err := run(t, data, args...)
		t.Logf("$ tether %s\n%s", strings.Join(args, " "), o)
		if err != nil {
			t.Fatalf("tether %v: %v", args, err)
		}
		return o
	}
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte("kind: Volume\nname: data-1\n---\nkind: Workload\nname: app-1\nnode: n1\nvolumes:\n  - name: data-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := run(t, data, "apply", "-f", spec)
	t.Logf("$ tether apply -f spec.yaml (data-1 not in the driver)\n%s", o)
	if err == nil || !strings.Contains(o, `CSI driver "csi.tether.test" has no volume with that ID`) {
		t.Fatalf("apply of a volume the driver lacks: %v, %q; want refused", err, o)
	}
	d.AddVolume("data-1")
	sh("apply", "-f", spec)
	testkit.Eventually(t, 20*time.Second, func() bool { r, n := running(t, data); return n == 1 && r == 1 }, "app-1 running")
	if o := sh("get", "volumes"); !strings.Contains(o, "data-1") || !strings.Contains(o, "n1") {
		t.Errorf("get volumes lacks data-1 attached to n1")
	}
	var nodes struct {
		Nodes []struct {
			InstanceID string `json:"instance_id"`
		}
	}
	if err := json.Unmarshal([]byte(sh("get", "nodes", "-o", "json")), &nodes); err != nil || len(nodes.Nodes) != 1 || nodes.Nodes[0].InstanceID != "node-1" {
		t.Errorf("nodes %+v, %v; want n1 alone, its instance the node plugin's ID", nodes, err)
	}
	target := filepath.Join(data, "nodes", "n1", "pods", "app-1", "volumes", process.CSIPlugin, "data-1")
	if !slices.Equal(d.PublishedTo("data-1"), []string{"node-1"}) || !slices.Equal(d.Targets("data-1", "node-1"), []string{target}) {
		t.Errorf("the driver has:\n%s", d.Describe())
	}
	if o, err := run(t, data, "node", "terminate", "n1"); err == nil || !strings.Contains(o, "no instances to administer") {
		t.Errorf("node terminate: %v, %q; want refused", err, o)
	}
	sh("delete", "workload", "app-1")
	testkit.Eventually(t, 20*time.Second, func() bool { return len(d.PublishedTo("data-1")) == 0 && len(d.Staged("data-1", "node-1")) == 0 }, "data-1 unpublished")
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	if !strings.Contains(out.String(), "cloud    csi: driver csi.tether.test; attachments: verified by ListVolumes (LIST_VOLUMES_PUBLISHED_NODES: a publication gone missing is healed, an extra listed node only reported); node n1 is its node ID node-1, at most 8 volumes") {
		t.Errorf("tether up did not say which driver it drives")
	}
}

// startUpCSI runs tether up (the binary) on data with the CSI driver's
// sockets ctl and nd and a sync every second, and returns once its API
// answers; it is killed at cleanup if still running, and what it printed
// is logged.
func startUpCSI(t *testing.T, data, ctl, nd, logLevel string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	up := exec.Command(binary(t), "up", "--data-dir", data, "--api-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--sync-period", "1s", "--log-level", logLevel, "--csi-controller-socket", ctl, "--csi-node-socket", nd)
	out := &syncBuffer{}
	up.Stdout, up.Stderr = out, out
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if up.ProcessState == nil {
			up.Process.Kill()
			up.Wait()
		}
		t.Logf("tether up:\n%s", out.String())
	})
	testkit.Eventually(t, 20*time.Second, func() bool { _, err := run(t, data, "get", "nodes"); return err == nil }, "tether up answering")
	return up, out
}
