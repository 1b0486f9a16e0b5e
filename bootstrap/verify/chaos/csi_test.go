package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tether/tether/bootstrap/process"
)

// A bounded chaos run on the fake CSI driver: actors, agents and the
// controller killed, the driver failing, slow, throttling, losing
// replies, hanging calls and restarting its plugins; the checkers judge
// the driver's own timeline, and it must hold every rule and converge.
// Nothing of it is left running: no goroutine, no socket.
func TestChaosOnCSI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	before := csiSocketDirs(t)
	rep := run(t, Config{Seed: 11, Duration: 6 * time.Second, Volumes: 12, Nodes: 3, Cloud: process.CloudCSI})
	t.Logf("driver: %d mutating calls, faults injected %v", rep.DriverCalls, rep.DriverFaults)
	if rep.Cloud != process.CloudCSI {
		t.Errorf("report's cloud %q, want csi", rep.Cloud)
	}
	if rep.Violations != 0 || !rep.Converged {
		t.Fatalf("%d violations, converged=%v:\n%s", rep.Violations, rep.Converged, details(rep))
	}
	if rep.Kills < 50 || rep.MountCalls == 0 || rep.DriverCalls == 0 || len(rep.DriverFaults) == 0 {
		t.Fatalf("too little happened: %d kills, %d mount calls, %d driver calls, driver faults %v", rep.Kills, rep.MountCalls, rep.DriverCalls, rep.DriverFaults)
	}
	if after := csiSocketDirs(t); after > before {
		t.Errorf("%d socket directories of the driver left behind", after-before)
	}
}

// A checker counts only if it can fail, on CSI too: each break (a
// test-only hook inside tether, or a stage sent behind its back before
// the volume is published: "I3-attach") must be reported from the
// driver's timeline, naming a volume and a node, with the volume's
// history.
func TestBrokenRulesAreCaughtOnCSI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos per rule")
	}
	for _, inv := range CSIBreaks {
		t.Run(inv, func(t *testing.T) {
			rep := run(t, Config{Seed: 3, Duration: 2 * time.Second, Volumes: 8, Nodes: 3, Break: inv, Converge: 3 * time.Second, Cloud: process.CloudCSI})
			// I3-attach must be caught by the driver's attachments, not
			// only by the node statuses.
			clause := map[string]string{"I3-attach": "while not attached to the node's instance"}[inv]
			for _, v := range rep.Found {
				if v.Invariant == inv[:2] && v.Volume != "" && v.Node != "" && len(v.History) > 0 && strings.Contains(v.Detail, clause) {
					t.Logf("caught: %s", v)
					return
				}
			}
			t.Fatalf("breaking %s was not reported (%d mount calls); found:\n%s", inv, rep.MountCalls, details(rep))
		})
	}
}

// Breaks that the driver cannot show are refused on CSI, and
// "I3-attach" elsewhere.
func TestCSIBreaksRefused(t *testing.T) {
	for _, cfg := range []Config{
		{Cloud: process.CloudCSI, Break: "I3-device"},
		{Cloud: process.CloudSim, Break: "I3-attach"},
	} {
		if _, err := checkConfig(cfg); err == nil {
			t.Errorf("cloud %s, break %s: accepted", cfg.Cloud, cfg.Break)
		}
	}
	if _, err := Run(context.Background(), Config{Cloud: process.CloudCSI, Break: "I3-device", Volumes: 1, Nodes: 2, Duration: time.Second}); err == nil {
		t.Error("Run broke I3-device on CSI")
	}
}

// csiSocketDirs counts the driver's socket directories in the temporary
// directory.
func csiSocketDirs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "tether-chaos-csi-") {
			n++
		}
	}
	return n
}
