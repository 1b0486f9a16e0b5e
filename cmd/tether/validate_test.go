package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
)

// Every numeric and duration flag has bounds; a value outside them is a
// usage error naming the flag, the value and what is allowed.
func TestValidateFlags(t *testing.T) {
	commands := map[string]struct {
		cmd      func() *cobra.Command
		validate func(*pflag.FlagSet) error
	}{
		"up":    {upCommand, validateUp},
		"demo":  {demoCommand, validateDemo},
		"chaos": {chaosCommand, validateChaos},
		"get":   {getCommand, validateClient},
		"apply": {applyCommand, validateClient},
		"bench": {benchCommand, validateBench},
		"cloud": {cloudServeCommand, validateCloudServe},
	}
	for _, tt := range []struct {
		command string
		args    []string
		want    string // "": accepted
	}{
		{"up", nil, ""},
		{"up", []string{"--sync-period", "1s", "--cloud-timeout", "1s", "--sim-latency", "999ms", "--sim-throttle", "0.1", "--max-wait-for-unmount", "0s", "--nodes", "1000", "--log-level", "debug", "--log-format", "json"}, ""},
		{"up", []string{"--sim-throttle", "1e6", "--api-addr", "[::1]:0", "--metrics-addr", ":9100"}, ""},
		{"up", []string{"--sync-period", "0s"}, "--sync-period 0s: want at least 1s (each sync makes one cloud call per batch of nodes"},
		{"up", []string{"--sync-period", "1ns"}, "--sync-period 1ns: want at least 1s"},
		{"up", []string{"--sync-period", "-1s"}, "--sync-period -1s: want at least 1s"},
		{"up", []string{"--sync-period", "999ms"}, "--sync-period 999ms: want at least 1s"},
		{"up", []string{"--cloud-timeout", "0s"}, "--cloud-timeout 0s: want at least 1s"},
		{"up", []string{"--max-wait-for-unmount", "-1s"}, "--max-wait-for-unmount -1s: want at least 0s"},
		{"up", []string{"--sim-latency", "-5s"}, "--sim-latency -5s: want at least 0s"},
		{"up", []string{"--sim-latency", "1m"}, "--sim-latency 1m0s: want less than --cloud-timeout 1m0s, or every call times out"},
		{"up", []string{"--sim-throttle", "-5"}, "--sim-throttle -5: want 0 (unlimited) or 0.1 to 1000000 calls per second"},
		{"up", []string{"--sim-throttle", "0.01"}, "--sim-throttle 0.01: want 0 (unlimited) or 0.1"},
		{"up", []string{"--sim-throttle", "NaN"}, "--sim-throttle NaN: want 0"},
		{"up", []string{"--cloud-qps", "-1"}, "--cloud-qps -1: want 0 (unlimited)"},
		{"up", []string{"--cloud-burst", "0"}, "--cloud-burst 0: want 1 to 1000000"},
		{"up", []string{"--cloud-max-inflight", "-1"}, "--cloud-max-inflight -1: want 0 to 1000000"},
		{"up", []string{"--cloud-qps", "0", "--cloud-max-inflight", "0"}, ""},
		{"up", []string{"--sim-throttle", "+Inf"}, "--sim-throttle +Inf: want 0"},
		{"up", []string{"--nodes", "0"}, "--nodes 0: want 1 to 1000"},
		{"up", []string{"--nodes", "1001"}, "--nodes 1001: want 1 to 1000"},
		{"up", []string{"--log-level", "bogus"}, "--log-level bogus: want debug, info, warn or error"},
		{"up", []string{"--log-format", "xml"}, "--log-format xml: want text or json"},
		{"up", []string{"--data-dir", ""}, `--data-dir "": want a path`},
		{"up", []string{"--api-addr", "7070"}, "--api-addr 7070: want host:port"},
		{"up", []string{"--metrics-addr", "localhost:http"}, "--metrics-addr localhost:http: want host:port with a port from 0 to 65535"},
		{"demo", nil, ""},
		{"demo", []string{"--sync-period", "0s"}, "--sync-period 0s: want at least 1s"},
		{"demo", []string{"--step-timeout", "-1s"}, "--step-timeout -1s: want at least 1s"},
		{"chaos", nil, ""},
		{"chaos", []string{"--duration", "1s", "--volumes", "1", "--nodes", "2"}, ""},
		{"chaos", []string{"--duration", "1ms"}, "--duration 1ms: want at least 1s"},
		{"chaos", []string{"--volumes", "0"}, "--volumes 0: want at least 1"},
		{"chaos", []string{"--nodes", "1"}, "--nodes 1: want 2 to 1000"},
		{"get", []string{"--timeout", "100ms"}, ""},
		{"get", []string{"--timeout", "0s"}, "--timeout 0s: want at least 100ms"},
		{"apply", []string{"--timeout", "-1s"}, "--timeout -1s: want at least 100ms"},
		{"bench", nil, ""},
		{"bench", []string{"--volumes", "0"}, "--volumes 0: want 1 to 1000000"},
		{"bench", []string{"--nodes", "100001"}, "--nodes 100001: want 1 to 100000"},
		{"bench", []string{"--sync-period", "10ms"}, "--sync-period 10ms: want at least 1s"},
		{"cloud", nil, ""},
		{"cloud", []string{"--addr", "7072"}, "--addr 7072: want host:port"},
		{"cloud", []string{"--sim-latency", "-1s"}, "--sim-latency -1s: want at least 0s"},
		{"cloud", []string{"--sim-throttle", "-1"}, "--sim-throttle -1: want 0 (unlimited)"},
		{"cloud", []string{"--data-dir", ""}, `--data-dir "": want a path`},
	} {
		t.Run(tt.command+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			c := commands[tt.command]
			cmd := c.cmd()
			if err := cmd.Flags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := c.validate(cmd.Flags())
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

// A value from the environment is refused under the environment
// variable's name.
func TestValidateNamesEnvironment(t *testing.T) {
	t.Setenv("TETHER_SYNC_PERIOD", "10ms")
	cmd := upCommand()
	if err := envFallback(cmd); err != nil {
		t.Fatal(err)
	}
	err := validateUp(cmd.Flags())
	if want := "TETHER_SYNC_PERIOD=10ms (for --sync-period): want at least 1s"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// A refused flag exits 2 (usage), before anything starts: the data
// directory given cannot be created, so a command that got past its flags
// would fail with 1.
func TestInvalidFlagsExit2(t *testing.T) {
	const bad = "/dev/null/tether"
	for _, args := range [][]string{
		{"up", "--sync-period", "0s"},
		{"up", "--sync-period", "1ns"},
		{"up", "--sync-period", "-1s"},
		{"up", "--cloud-timeout", "0s"},
		{"up", "--max-wait-for-unmount", "-1s"},
		{"up", "--sim-throttle", "-5"},
		{"up", "--sim-throttle", "NaN"},
		{"up", "--sim-latency", "-5s"},
		{"up", "--log-level", "bogus"},
		{"up", "--log-format", "xml"},
		{"up", "--nodes", "0"},
		{"demo", "--sync-period", "0s"},
		{"demo", "--step-timeout", "0s"},
		{"chaos", "--duration", "1ms"},
		{"chaos", "--distributed", "--ui"},
		{"get", "volumes", "--timeout", "0s"},
		{"describe", "volume", "v", "--timeout", "-1s"},
		{"delete", "volume", "v", "--timeout", "-1s"},
		{"node", "terminate", "n1", "--timeout", "-1s"},
		{"apply", "-f", "-", "--timeout", "-1s"},
	} {
		code, out := execute("kind: Node\nname: n1\n", append(args, "--data-dir", bad)...)
		if code != exitUsage || !strings.Contains(out, args[len(args)-2]) {
			t.Errorf("tether %s: exit %d, %q; want exit 2 naming the flag", strings.Join(args, " "), code, out)
		}
	}
}

// An error a command returns once it ran is exit 1 whatever its text says
// (a server's message may well contain "requires " or "accepts "); cobra's
// own errors, before the command runs, are usage errors.
func TestExitCodeByOrigin(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"no-such-command"}, exitUsage},
		{[]string{"get"}, exitUsage},                                       // wrong number of arguments
		{[]string{"get", "volumes", "--bogus"}, exitUsage},                 // unknown flag
		{[]string{"get", "volumes", "--data-dir", t.TempDir()}, exitError}, // ran: no tether there
	} {
		if got, out := execute("", tt.args...); got != tt.want {
			t.Errorf("tether %v: exit %d, want %d\n%s", tt.args, got, tt.want, out)
		}
	}
	if got := exitCode(runError{errors.New("volume requires a node; accepts only ...")}); got != exitError {
		t.Errorf("a run error mentioning requires/accepts: exit %d, want %d", got, exitError)
	}
}

// Against a throttled sim, tether's own limit follows the sim's unless
// given.
func TestCloudLimitFollowsSimThrottle(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		qps        float64
		burst, max int
	}{
		{nil, 20, 40, 64},
		{[]string{"--sim-throttle", "10"}, 9, 10, 64},
		{[]string{"--sim-throttle", "10", "--cloud-qps", "5"}, 5, 10, 64},
		{[]string{"--sim-throttle", "10", "--cloud-burst", "3", "--cloud-max-inflight", "2"}, 9, 3, 2},
	} {
		cmd := upCommand()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		cfg := process.DefaultConfig()
		fs := cmd.Flags()
		cfg.Sim.ThrottleRate, _ = fs.GetFloat64("sim-throttle")
		cfg.CloudLimit.QPS, _ = fs.GetFloat64("cloud-qps")
		cfg.CloudLimit.Burst, _ = fs.GetInt("cloud-burst")
		cfg.CloudLimit.MaxInFlight, _ = fs.GetInt("cloud-max-inflight")
		matchSimThrottle(fs, &cfg)
		if got := cfg.CloudLimit; got.QPS != tt.qps || got.Burst != tt.burst || got.MaxInFlight != tt.max {
			t.Errorf("%v: limit %+v, want QPS %v burst %d max in flight %d", tt.args, got, tt.qps, tt.burst, tt.max)
		}
	}
}
