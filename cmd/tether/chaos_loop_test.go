package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/verify/chaos"
)

// tether chaos --cloud loop: root only, embedded only, within the loop
// bounds, each refusal a usage error naming the flag; the flags not given
// take the loop cloud's smaller defaults.
func TestChaosLoopFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		uid  int
		dist bool
		want string // "": accepted
		cfg  chaos.Config
	}{
		{nil, 1000, false, "", chaos.Config{Volumes: 24, Nodes: 4, Duration: 20 * time.Second}},
		{[]string{"--cloud", "loop"}, 0, false, "", chaos.Config{Volumes: 6, Nodes: 3, Duration: 30 * time.Second}},
		{[]string{"--cloud", "loop", "--volumes", "2", "--nodes", "2", "--duration", "5s"}, 0, false, "", chaos.Config{Volumes: 2, Nodes: 2, Duration: 5 * time.Second}},
		{[]string{"--cloud", "loop"}, 1000, false, "--cloud loop: needs root (running as uid 1000)", chaos.Config{}},
		{[]string{"--cloud", "loop"}, 0, true, "--cloud loop: not with --distributed", chaos.Config{}},
		{[]string{"--cloud", "loop", "--volumes", "33"}, 0, false, "--volumes 33: want 1 to 32 (with --cloud loop", chaos.Config{}},
		{[]string{"--cloud", "loop", "--nodes", "9"}, 0, false, "--nodes 9: want 2 to 8 (with --cloud loop", chaos.Config{}},
		{[]string{"--loop-volume-size", "8MiB"}, 0, false, "--loop-volume-size 8MiB: applies to --cloud loop only", chaos.Config{}},
		{[]string{"--cloud", "loop", "--loop-volume-size", "1MiB"}, 0, false, "--loop-volume-size 1MiB: want 4MiB to 16TiB", chaos.Config{}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			asUID(t, tt.uid)
			cmd := chaosCommand()
			if err := cmd.Flags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var cfg chaos.Config
			cfg.Cloud, _ = cmd.Flags().GetString("cloud")
			cfg.Volumes, _ = cmd.Flags().GetInt("volumes")
			cfg.Nodes, _ = cmd.Flags().GetInt("nodes")
			cfg.Duration, _ = cmd.Flags().GetDuration("duration")
			err := validateLoopChaos(cmd.Flags(), &cfg, tt.dist)
			if tt.want != "" {
				var u usageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want a usage error with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if cfg.Volumes != tt.cfg.Volumes || cfg.Nodes != tt.cfg.Nodes || cfg.Duration != tt.cfg.Duration {
				t.Fatalf("volumes %d, nodes %d, duration %s; want %d, %d, %s", cfg.Volumes, cfg.Nodes, cfg.Duration, tt.cfg.Volumes, tt.cfg.Nodes, tt.cfg.Duration)
			}
		})
	}
}

// Not as root, tether chaos --cloud loop exits 2 before anything starts.
func TestChaosLoopNotRootExits2(t *testing.T) {
	asUID(t, 1000)
	code, out := execute("", "chaos", "--cloud", "loop", "--duration", "1s")
	if code != exitUsage || !strings.Contains(out, "--cloud loop: needs root") {
		t.Fatalf("exit %d, %q; want exit 2 saying root is needed", code, out)
	}
}
