package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tether/tether/bootstrap/verify/demo"
)

// tether demo --csi --json runs the scenario on the fake CSI driver and
// prints one object saying so: cloud csi, the driver, how attachments are
// verified and the driver's call counts. Nothing is left running.
func TestDemoCSIJSON(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetArgs([]string{"demo", "--csi", "--json", "--sync-period", "1s", "--step-timeout", "20s"})
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.Execute(); err != nil {
		t.Fatalf("exit %d: %v\nstdout:\n%s\nstderr:\n%s", exitCode(err), err, out.String(), errOut.String())
	}
	var rep demo.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out.String())
	}
	if rep.Cloud != "csi" || !rep.Converged || rep.Violations != 0 || rep.CSI == nil {
		t.Fatalf("report: %s", out.String())
	}
	c := rep.CSI
	if c.Driver != demo.CSIDriverName || c.AttachmentsVerifiedBy != "tether's records" {
		t.Errorf("driver %q, attachments verified by %q", c.Driver, c.AttachmentsVerifiedBy)
	}
	for _, pair := range [][2]string{{"ControllerPublishVolume", "ControllerUnpublishVolume"}, {"NodeStageVolume", "NodeUnstageVolume"}, {"NodePublishVolume", "NodeUnpublishVolume"}} {
		if c.Calls[pair[0]] == 0 || c.Calls[pair[0]] != c.Calls[pair[1]] {
			t.Errorf("%s %d, %s %d: want as many of each, not 0", pair[0], c.Calls[pair[0]], pair[1], c.Calls[pair[1]])
		}
	}
}

// --csi with another cloud's flags exits 2 before anything starts, naming
// the flag.
func TestDemoCSIConflicts(t *testing.T) {
	asUID(t, 0) // so that --cloud loop alone would be accepted
	for _, args := range [][]string{
		{"demo", "--csi", "--cloud", "loop"},
		{"demo", "--cloud", "loop", "--csi"},
		{"demo", "--csi", "--cloud", "sim"},
		{"demo", "--csi", "--loop-volume-size", "1GiB"},
	} {
		code, out := execute("", append(args, "--data-dir", "/dev/null/tether")...)
		flag := "--cloud"
		if args[2] == "--loop-volume-size" {
			flag = "--loop-volume-size"
		}
		if code != exitUsage || !strings.Contains(out, flag) || !strings.Contains(out, "not with --csi") {
			t.Errorf("tether %s: exit %d, %q; want exit 2 naming %s and --csi", strings.Join(args, " "), code, out, flag)
		}
	}
	t.Setenv("TETHER_CLOUD", "loop")
	code, out := execute("", "demo", "--csi", "--data-dir", "/dev/null/tether")
	if code != exitUsage || !strings.Contains(out, "TETHER_CLOUD=loop (for --cloud): not with --csi") {
		t.Errorf("TETHER_CLOUD=loop --csi: exit %d, %q; want exit 2 naming the variable", code, out)
	}
}
