package chaos

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

func TestPlanIsDeterministic(t *testing.T) {
	a, b := Plan(7, 2*time.Second, 10, 3), Plan(7, 2*time.Second, 10, 3)
	if !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("same seed, different plans (%d and %d actions)", len(a), len(b))
	}
	if reflect.DeepEqual(a, Plan(8, 2*time.Second, 10, 3)) {
		t.Fatal("different seeds, same plan")
	}
	kinds := map[string]bool{}
	for i, x := range a {
		kinds[x.Kind] = true
		if i > 0 && x.At < a[i-1].At {
			t.Fatalf("plan not in time order at %d", i)
		}
	}
	for _, k := range []string{KillVolume, KillNode, CreateWorkload} {
		if !kinds[k] {
			t.Errorf("a 2 s plan has no %s", k)
		}
	}
}

// A short chaos run on the real actor system: zero violations, converged.
func TestChaosRunHoldsInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos")
	}
	for _, seed := range []uint64{1, 2} {
		rep, err := Run(context.Background(), Config{Seed: seed, Duration: 3 * time.Second, Volumes: 12, Nodes: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: %d kills, %d restarts, %d faults, converged in %.2fs", seed, rep.Kills, rep.Restarts, rep.Faults, rep.ConvergeSeconds)
		if rep.Violations != 0 || !rep.Converged {
			t.Fatalf("seed %d: %d violations %v, converged=%v (%s)", seed, rep.Violations, rep.Details, rep.Converged, rep.NotConverged)
		}
		if rep.Kills < 50 {
			t.Fatalf("seed %d: only %d kills", seed, rep.Kills)
		}
	}
}

// A checker that cannot fail is worthless: with the test-only hook that
// makes tether detach volumes still in use, moving a mounted workload must
// be reported as I2, naming the volume and the node.
func TestBrokenRuleIsCaught(t *testing.T) {
	dir := t.TempDir()
	chk := &Checker{Now: time.Now}
	ec := bootstrap.DefaultConfig()
	ec.DataDir, ec.Nodes, ec.LogLevel = dir, 2, "error"
	ec.Controller.Volume.BreakIgnoreInUse, ec.Controller.Node.BreakIgnoreInUse = true, true
	ec.WrapMounter = chk.WrapMounter
	e, err := bootstrap.StartEmbedded(ec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { (&runner{e: e}).teardown() })
	chk.Cloud, chk.NodeDir = e.Cloud, e.NodeDir
	chk.Store = func() store.Store { return e.Store }
	chk.Mounter = func(n cloud.NodeName) mount.Mounter { m, _ := e.Mounter(n); return m }
	e.Cloud.Observe(chk.OnChange)
	e.Events.Subscribe(func(ev events.Event) { chk.OnEvent(ev) })

	e.Cloud.CreateVolume("v1", cloud.Exclusive)
	must(t, e.Ctl().ApplyVolume(store.VolumeSpec{ID: "v1"}))
	must(t, e.Ctl().ApplyWorkload(store.Workload{UID: "w1", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}))
	waitFor(t, "mounted on n1", func() bool { return chk.mountedOn("n1", "v1") != "" })
	must(t, e.Ctl().ApplyWorkload(store.Workload{UID: "w1", Node: "n2", Volumes: []cloud.VolumeID{"v1"}}))
	waitFor(t, "the checker reports I2", func() bool { return len(chk.Violations()) > 0 })
	v := chk.Violations()[0]
	if v.Invariant != "I2" || v.Volume != "v1" || v.Node != "n1" || !strings.Contains(v.Detail, "mounted") {
		t.Fatalf("violation = %s, want I2 for v1 on n1", v)
	}
	if len(v.History) == 0 {
		t.Fatal("violation without the volume's history")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
