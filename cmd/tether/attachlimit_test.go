package main

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/bootstrap/verify/bench"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/sim"
)

// The sim attach limit flags (tether cloud serve --attach-limit, tether up
// --sim-attach-limit, tether bench --attach-limit) take 1 to 100000; a
// value outside is a usage error (exit 2) naming the flag, the value and
// what is allowed, before anything starts: the data directory given cannot
// be made, so a command that got past its flags would fail with 1. A bench
// shape that does not fit the limit is refused the same way.
func TestAttachLimitFlagsRefused(t *testing.T) {
	const bad = "/dev/null/tether"
	const allowed = ": want 1 to 100000 (volumes one sim instance may have attached)"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"cloud", "serve", "--attach-limit", "0", "--data-dir", bad}, "--attach-limit 0" + allowed},
		{[]string{"cloud", "serve", "--attach-limit", "-1", "--data-dir", bad}, "--attach-limit -1" + allowed},
		{[]string{"cloud", "serve", "--attach-limit", "100001", "--data-dir", bad}, "--attach-limit 100001" + allowed},
		{[]string{"up", "--sim-attach-limit", "0", "--data-dir", bad}, "--sim-attach-limit 0" + allowed},
		{[]string{"up", "--sim-attach-limit", "100001", "--data-dir", bad}, "--sim-attach-limit 100001" + allowed},
		{[]string{"bench", "--attach-limit", "0", "--dir", bad}, "--attach-limit 0" + allowed},
		{[]string{"bench", "--attach-limit", "100001", "--dir", bad}, "--attach-limit 100001" + allowed},
		{[]string{"bench", "--volumes", "380", "--nodes", "10", "--dir", bad},
			"380 volumes over 10 nodes put up to 76 on one node (its share, and during the churn phase the volumes moving onto it), more than the attach limit 39: give more nodes, or --attach-limit 76"},
		{[]string{"bench", "--volumes", "10000", "--nodes", "100", "--attach-limit", "199", "--dir", bad}, "more than the attach limit 199: give more nodes, or --attach-limit 200"},
	} {
		code, out := execute("", tt.args...)
		if code != exitUsage || !strings.Contains(out, tt.want) {
			t.Errorf("tether %s: exit %d, %q; want exit 2 and %q", strings.Join(tt.args, " "), code, out, tt.want)
		}
	}

	// From the environment, under the variable's name.
	t.Setenv("TETHER_ATTACH_LIMIT", "0")
	if code, out := execute("", "cloud", "serve", "--data-dir", bad); code != exitUsage || !strings.Contains(out, "TETHER_ATTACH_LIMIT=0 (for --attach-limit)"+allowed) {
		t.Errorf("TETHER_ATTACH_LIMIT=0 tether cloud serve: exit %d, %q; want exit 2 naming the variable", code, out)
	}
}

// The bounds themselves, and the default, are accepted.
func TestAttachLimitFlagsAccepted(t *testing.T) {
	if maxAttachLimit != bench.MaxAttachLimit {
		t.Fatalf("maxAttachLimit %d, bench.MaxAttachLimit %d: tether bench's --attach-limit is checked against both", maxAttachLimit, bench.MaxAttachLimit)
	}
	for _, tt := range []struct {
		cmd  string
		args []string
	}{
		{"cloud", nil},
		{"cloud", []string{"--attach-limit", "1"}},
		{"cloud", []string{"--attach-limit", "100000"}},
		{"up", nil},
		{"up", []string{"--sim-attach-limit", "1"}},
		{"up", []string{"--sim-attach-limit", "100000"}},
		{"bench", []string{"--attach-limit", "1"}},
		{"bench", []string{"--attach-limit", "100000"}},
	} {
		var err error
		switch tt.cmd {
		case "cloud":
			c := cloudServeCommand()
			if err = c.ParseFlags(tt.args); err == nil {
				err = validateCloudServe(c.Flags())
			}
		case "up":
			c := upCommand()
			if err = c.ParseFlags(tt.args); err == nil {
				v := validator{fs: c.Flags()}
				err = v.attachLimit("sim-attach-limit")
			}
		case "bench":
			c := benchCommand()
			if err = c.ParseFlags(tt.args); err == nil {
				err = validateBench(c.Flags())
			}
		}
		if err != nil {
			t.Errorf("tether %s %v: %v", tt.cmd, tt.args, err)
		}
	}
	for _, d := range []struct {
		name string
		got  func() (int, error)
	}{
		{"cloud serve --attach-limit", func() (int, error) { return cloudServeCommand().Flags().GetInt("attach-limit") }},
		{"up --sim-attach-limit", func() (int, error) { return upCommand().Flags().GetInt("sim-attach-limit") }},
		{"bench --attach-limit", func() (int, error) { return benchCommand().Flags().GetInt("attach-limit") }},
	} {
		if got, err := d.got(); err != nil || got != sim.DefaultAttachLimit {
			t.Errorf("tether %s defaults to %d (%v), want the sim's %d", d.name, got, err, sim.DefaultAttachLimit)
		}
	}
}

// tether cloud serve --attach-limit 2, the binary: an instance it creates
// takes two volumes, and a third attach is refused with the sim's class.
func TestCloudServeAttachLimit(t *testing.T) {
	cmd := exec.Command(binary(t), "cloud", "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--attach-limit", "2")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("tether cloud serve: %v\n%s", err, out)
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() { // to the end: the child never blocks on its stdout
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatalf("tether cloud serve did not say it serves in 20s: %s", out)
	}
	if !strings.Contains(line, "attach limit of new instances 2") {
		t.Errorf("serving line %q does not name the attach limit 2", line)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "tether cloud serving on "), " ")
	c, err := remote.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inst, err := c.AddInstanceChecked("n1")
	if err != nil {
		t.Fatal(err)
	}
	ids := []cloud.VolumeID{"v1", "v2", "v3"}
	var specs []cloud.VolumeSpec
	for _, v := range ids {
		specs = append(specs, cloud.VolumeSpec{ID: v, Mode: cloud.Exclusive})
	}
	if err := c.CreateVolumesUncommitted(specs); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitVolumes(ids); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, v := range ids {
		_, err := c.Attach(ctx, v, inst)
		switch {
		case i < 2 && err != nil:
			t.Fatalf("attach %d of 2: %v", i+1, err)
		case i == 2 && !errors.Is(err, cloud.ErrLimitReached):
			t.Fatalf("a third attach under --attach-limit 2: %v, want %v", err, cloud.ErrLimitReached)
		}
	}
}
