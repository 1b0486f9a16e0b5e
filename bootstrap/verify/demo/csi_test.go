package demo

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// TestMain fails the package if a demo left a goroutine behind (tether's
// actors, the fake driver's servers, the connections to them).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
}

// privateTemp makes the temporary directory of the test's process a new
// empty one, and returns it: the demo's data directory and its sockets'
// directory go there, and must be gone when the demo returns.
func privateTemp(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

// emptyAfter fails unless dir holds nothing.
func emptyAfter(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the demo left %v in %s", left, dir)
	}
}

// tether demo --csi: the scenario converges on the fake driver, judged
// on its log of calls; the report names the driver and how attachments
// are verified, counts each call as many times as its reverse, and
// follows app-2's volume through its life; sockets and data directory
// are gone afterwards.
func TestDemoCSI(t *testing.T) {
	tmp := privateTemp(t)
	var out bytes.Buffer
	rep, err := Run(Config{Cloud: process.CloudCSI, SyncPeriod: 200 * time.Millisecond, StepTimeout: 20 * time.Second, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Converged || rep.Violations != 0 || len(rep.Steps) != 5 {
		t.Fatalf("converged %v, %d violations %v, steps %+v; output:\n%s", rep.Converged, rep.Violations, rep.Found, rep.Steps, out.String())
	}
	c := rep.CSI
	if rep.Cloud != process.CloudCSI || c == nil || c.Driver != CSIDriverName || c.AttachmentsVerifiedBy != "tether's records" ||
		c.Nodes["n1"] != "demo-node-1" || c.Nodes["n2"] != "demo-node-2" || c.MaxVolumesPerNode != CSIMaxVolumes {
		t.Fatalf("report: cloud %q, csi %+v", rep.Cloud, c)
	}
	// Four volumes over two nodes, two of them moving to the other node
	// with app-4: six publications, each staged once; app-1..3 and app-4
	// with two targets each.
	for m, want := range map[string]int{
		"ControllerPublishVolume": 6, "ControllerUnpublishVolume": 6, "NodeStageVolume": 6, "NodeUnstageVolume": 6,
		"NodePublishVolume": 8, "NodeUnpublishVolume": 8, "ControllerGetVolume": 0, "ValidateVolumeCapabilities": 4,
	} {
		if got, ok := c.Calls[m]; !ok || got != want {
			t.Errorf("%s: %d calls (reported: %v), want %d", m, got, ok, want)
		}
	}
	var methods []string
	for _, call := range c.Life.Calls {
		methods = append(methods, strings.Fields(call)[0])
	}
	want := []string{"ValidateVolumeCapabilities", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"}
	if c.Life.Workload != "app-2" || !slices.Equal(methods, want) {
		t.Errorf("life of %s: %v, want %v", c.Life.Workload, c.Life.Calls, want)
	}
	if c.Calls["ControllerPublishVolume"] != rep.CloudCalls["attach"] {
		t.Errorf("tether counts %d attaches, the driver %d publishes", rep.CloudCalls["attach"], c.Calls["ControllerPublishVolume"])
	}
	var text bytes.Buffer
	c.WriteText(&text)
	for _, s := range []string{"csi driver " + CSIDriverName, "attachments verified by tether's records", "NodeStageVolume 6", "node n2 is node ID demo-node-2", "app-2's life", "NodePublishVolume data-2 node demo-node-2 at nodes/n2/pods/app-2/volumes/tether-csi/data-2"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, text.String())
		}
	}
	emptyAfter(t, tmp)
}

// A demo on the fake driver that fails (steps with no time to converge)
// still stops tether and the driver and removes the sockets and the data
// directory (TestMain checks the goroutines).
func TestDemoCSIFailureCleansUp(t *testing.T) {
	tmp := privateTemp(t)
	rep, err := Run(Config{Cloud: process.CloudCSI, SyncPeriod: time.Second, StepTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Converged || len(rep.Steps) == 0 || rep.Steps[len(rep.Steps)-1].Error == "" {
		t.Fatalf("converged %v with no time to converge: %+v", rep.Converged, rep.Steps)
	}
	emptyAfter(t, tmp)
}

// judgeCalls finds each rule broken in a driver's log, and nothing in a
// log that keeps them.
func TestJudgeCalls(t *testing.T) {
	call := func(method, vol, node, path string) csitest.Call {
		return csitest.Call{Method: method, Volume: vol, Node: node, Path: path}
	}
	pub := func(vol, node, target, staging string) csitest.Call {
		c := call("NodePublishVolume", vol, node, target)
		c.Staging = staging
		return c
	}
	good := []csitest.Call{
		call("ControllerPublishVolume", "v", "a", ""), call("NodeStageVolume", "v", "a", "/s"), pub("v", "a", "/t", "/s"),
		call("NodeUnpublishVolume", "v", "a", "/t"), call("NodeUnstageVolume", "v", "a", "/s"), call("ControllerUnpublishVolume", "v", "a", ""),
		call("ControllerPublishVolume", "v", "b", ""),
	}
	for name, tc := range map[string]struct {
		calls []csitest.Call
		mode  cloud.AccessMode
		want  []string // invariants, in order
	}{
		"kept":                         {good, cloud.Exclusive, nil},
		"I1 exclusive on two nodes":    {[]csitest.Call{good[0], call("ControllerPublishVolume", "v", "b", "")}, cloud.Exclusive, []string{"I1"}},
		"multi-node on two nodes":      {[]csitest.Call{good[0], call("ControllerPublishVolume", "v", "b", "")}, cloud.MultiNode, nil},
		"I2 unpublished while staged":  {[]csitest.Call{good[0], good[1], call("ControllerUnpublishVolume", "v", "a", "")}, cloud.Exclusive, []string{"I2"}},
		"I3 staged before published":   {[]csitest.Call{good[1], good[0]}, cloud.Exclusive, []string{"I3"}},
		"I3 target after unpublished":  {[]csitest.Call{good[0], good[1], call("ControllerUnpublishVolume", "v", "a", ""), pub("v", "a", "/t", "/s")}, cloud.Exclusive, []string{"I2", "I3"}},
		"CSI published unstaged":       {[]csitest.Call{good[0], pub("v", "a", "/t", "/s")}, cloud.Exclusive, []string{"CSI"}},
		"CSI unstaged while published": {[]csitest.Call{good[0], good[1], good[2], good[4]}, cloud.Exclusive, []string{"CSI"}},
	} {
		t.Run(name, func(t *testing.T) {
			found := judgeCalls(tc.calls, map[cloud.VolumeID]cloud.AccessMode{"v": tc.mode}, map[cloud.NodeName]string{"n1": "a", "n2": "b"})
			var got []string
			for _, v := range found {
				got = append(got, v.Invariant)
				if v.Volume != "v" || v.Node == "" || len(v.History) == 0 {
					t.Errorf("violation %+v: want its volume, node and history", v)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("found %v, want %v: %v", got, tc.want, found)
			}
		})
	}
}
