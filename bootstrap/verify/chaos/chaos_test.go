package chaos

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestPlanIsDeterministic(t *testing.T) {
	a, b := Plan(7, 2*time.Second, 10, 3), Plan(7, 2*time.Second, 10, 3)
	if !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("same seed, different plans (%d and %d actions)", len(a), len(b))
	}
	if reflect.DeepEqual(a, Plan(8, 2*time.Second, 10, 3)) {
		t.Fatal("different seeds, same plan")
	}
	for i, x := range a {
		if i > 0 && x.At < a[i-1].At {
			t.Fatalf("plan not in time order at %d", i)
		}
	}
	kinds := map[string]bool{}
	for _, x := range Plan(7, 10*time.Second, 10, 3) {
		kinds[x.Kind] = true
	}
	for _, w := range weights {
		if !kinds[w.kind] {
			t.Errorf("a 10 s plan has no %s", w.kind)
		}
	}
}

// A short chaos run on the real actor system: zero violations, converged.
func TestChaosRunHoldsInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos")
	}
	for _, seed := range []uint64{1, 2} {
		rep := run(t, Config{Seed: seed, Duration: 3 * time.Second, Volumes: 12, Nodes: 3})
		if rep.Violations != 0 || !rep.Converged {
			t.Fatalf("seed %d: %d violations, converged=%v:\n%s", seed, rep.Violations, rep.Converged, details(rep))
		}
		if rep.Kills < 50 {
			t.Fatalf("seed %d: only %d kills", seed, rep.Kills)
		}
	}
}

func run(t *testing.T, cfg Config) Report {
	t.Helper()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d break %q: %d kills, %d restarts, %d faults %v, %d mount calls (%d disks checked, %d decisions checked), %d violations, converged=%v in %.2fs",
		cfg.Seed, cfg.Break, rep.Kills, rep.Restarts, rep.Faults, rep.FaultsByKind, rep.MountCalls, rep.DisksChecked, rep.DecisionsChecked, rep.Violations, rep.Converged, rep.ConvergeSeconds)
	return rep
}

func details(rep Report) string {
	s := ""
	for _, v := range rep.Found {
		s += v.String() + "\n"
		for _, h := range v.History {
			s += "    " + h + "\n"
		}
	}
	return s
}
