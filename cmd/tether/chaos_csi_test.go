package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/verify/chaos"
)

// tether chaos --csi: embedded only, on no other cloud, within its
// bounds; each refusal a usage error (exit 2) naming the flag, before
// anything starts.
func TestChaosCSIFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // "": accepted
	}{
		{[]string{"--csi"}, ""},
		{[]string{"--csi", "--nodes", "3", "--volumes", "5"}, ""},
		{[]string{"--csi", "--distributed"}, "--distributed true: not with --csi"},
		{[]string{"--csi", "--cloud", "loop"}, "--cloud loop: not with --csi"},
		{[]string{"--csi", "--cloud", "sim"}, "--cloud sim: not with --csi"},
		{[]string{"--csi", "--nodes", "65"}, "--nodes 65: want 2 to 64 (with --csi"},
		{[]string{"--csi", "--loop-volume-size", "8MiB"}, "--loop-volume-size 8MiB: applies to --cloud loop only"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out := execute("", append([]string{"chaos", "--duration", "1s"}, tt.args...)...)
			if tt.want != "" {
				if code != exitUsage || !strings.Contains(out, tt.want) {
					t.Fatalf("exit %d, %q; want exit 2 with %q", code, out, tt.want)
				}
				return
			}
			cmd := chaosCommand()
			if err := cmd.Flags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := validateCSIChaos(cmd.Flags(), false, true); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// A short tether chaos --csi --json prints the report, its cloud csi,
// with the driver's calls and faults counted, and exits 0.
func TestChaosCSIRunPrintsJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a second of chaos")
	}
	code, out := execute("", "chaos", "--csi", "--seed", "5", "--duration", "1s", "--volumes", "4", "--nodes", "2", "--json")
	var rep chaos.Report
	line := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("exit %d; no JSON report on the last line: %v\n%s", code, err, out)
	}
	if code != 0 || rep.Cloud != process.CloudCSI || rep.Seed != 5 || rep.DriverCalls == 0 || !rep.Converged {
		t.Fatalf("exit %d, cloud %q, seed %d, %d driver calls, converged %v; want exit 0 on csi with calls:\n%s", code, rep.Cloud, rep.Seed, rep.DriverCalls, rep.Converged, out)
	}
}
