package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tether/tether/bootstrap/process"
)

// asUID makes the commands see uid as their effective user until the test
// ends.
func asUID(t *testing.T, uid int) {
	t.Helper()
	old := geteuid
	geteuid = func() int { return uid }
	t.Cleanup(func() { geteuid = old })
}

// --cloud is sim or loop; the flags of one cloud are refused with the
// other; --loop-volume-size is a size within bounds; --cloud loop needs
// root. Each refusal is a usage error naming the flag.
func TestCloudFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		uid  int
		want string // "": accepted
	}{
		{nil, 1000, ""},
		{[]string{"--cloud", "sim"}, 1000, ""},
		{[]string{"--cloud", "loop"}, 0, ""},
		{[]string{"--cloud", "loop", "--loop-volume-size", "4MiB"}, 0, ""},
		{[]string{"--cloud", "loop", "--loop-volume-size", "16TiB"}, 0, ""},
		{[]string{"--cloud", "loop", "--loop-volume-size", "67109376"}, 0, ""},
		{[]string{"--cloud", "bogus"}, 0, "--cloud bogus: want sim or loop"},
		{[]string{"--cloud", "loop"}, 1000, "--cloud loop: needs root (running as uid 1000): the loop cloud binds loop devices"},
		{[]string{"--loop-volume-size", "1GiB"}, 0, "--loop-volume-size 1GiB: applies to --cloud loop only"},
		{[]string{"--cloud", "loop", "--loop-volume-size", "1MiB"}, 0, "--loop-volume-size 1MiB: want 4MiB to 16TiB, a multiple of 512 bytes"},
		{[]string{"--cloud", "loop", "--loop-volume-size", "17TiB"}, 0, "--loop-volume-size 17TiB: want 4MiB to 16TiB"},
		{[]string{"--cloud", "loop", "--loop-volume-size", "67108865"}, 0, "--loop-volume-size 67108865: want 4MiB to 16TiB, a multiple of 512 bytes"},
	} {
		for name, command := range map[string]func() *cobra.Command{"up": upCommand, "demo": demoCommand} {
			t.Run(name+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				asUID(t, tt.uid)
				cmd := command()
				if err := cmd.Flags().Parse(tt.args); err != nil {
					t.Fatal(err)
				}
				err := (&validator{fs: cmd.Flags()}).checkCloud()
				if tt.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var u usageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want a usage error with %q", err, tt.want)
				}
			})
		}
	}
	values := map[string]string{"sim-latency": "1ms", "sim-throttle": "1", "sim-attach-limit": "1"}
	for _, flag := range simOnlyFlags {
		cmd := upCommand()
		if err := cmd.Flags().Parse([]string{"--cloud", "loop", "--" + flag, values[flag]}); err != nil {
			t.Fatal(err)
		}
		err := (&validator{fs: cmd.Flags()}).checkCloud()
		if want := "--" + flag + " " + values[flag]; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "applies to --cloud sim only") {
			t.Errorf("--cloud loop --%s: err = %v, want a refusal naming the flag", flag, err)
		}
	}
}

// tether up and demo with --cloud loop, not as root, exit 2 naming the
// flag and why, before anything starts: the data directory given cannot
// be created, so a command that got past its flags would fail with 1.
func TestCloudLoopNotRootExit2(t *testing.T) {
	asUID(t, 1000)
	for _, args := range [][]string{
		{"up", "--cloud", "loop"},
		{"demo", "--cloud", "loop"},
		{"up", "--cloud", "loop", "--sim-latency", "1ms"},
		{"demo", "--cloud", "loop", "--loop-volume-size", "1MiB"},
	} {
		code, out := execute("", append(args, "--data-dir", "/dev/null/tether")...)
		if flag := args[len(args)-2]; code != exitUsage || !strings.Contains(out, flag) {
			t.Errorf("tether %s: exit %d, %q; want exit 2 naming %s", strings.Join(args, " "), code, out, flag)
		}
	}
	code, out := execute("", "up", "--cloud", "loop", "--data-dir", "/dev/null/tether")
	if code != exitUsage || !strings.Contains(out, "needs root (running as uid 1000)") {
		t.Errorf("exit %d, %q; want exit 2 saying it needs root", code, out)
	}
	t.Setenv("TETHER_CLOUD", "loop")
	code, out = execute("", "demo", "--data-dir", "/dev/null/tether")
	if code != exitUsage || !strings.Contains(out, "TETHER_CLOUD=loop (for --cloud): needs root") {
		t.Errorf("TETHER_CLOUD=loop: exit %d, %q; want exit 2 naming the variable", code, out)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "512": 512, "64MiB": 64 << 20, "64 MiB": 64 << 20, "1GiB": 1 << 30, "3KiB": 3 << 10, "2TiB": 2 << 40, "100B": 100,
	} {
		var s byteSize
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "-1", "64MB", "1.5GiB", "GiB", "9999999999TiB", "0x10"} {
		var s byteSize
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, s)
		}
	}
	for n, want := range map[int64]string{0: "0", 512: "512", 64 << 20: "64MiB", 1 << 30: "1GiB", 3072: "3KiB", 67109376: "67109376"} {
		s := byteSize(n)
		if got := s.String(); got != want {
			t.Errorf("byteSize(%d).String() = %q, want %q", n, got, want)
		}
	}
	if process.DefaultLoopVolumeSize != 64<<20 {
		t.Errorf("the default volume size is %d, docs/storage.md and docs/operating.md say 64 MiB", process.DefaultLoopVolumeSize)
	}
}
