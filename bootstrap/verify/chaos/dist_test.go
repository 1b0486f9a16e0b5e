package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// The distributed runs start processes of the tether binary, built once
// (on first use, so that the embedded tests do not wait for it) and
// removed by TestMain.
var tether struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tether.dir != "" {
		_ = os.RemoveAll(tether.dir)
	}
	os.Exit(code)
}

func tetherBinary(t *testing.T) string {
	t.Helper()
	tether.once.Do(func() {
		if tether.dir, tether.err = os.MkdirTemp("", "tether-chaos-bin-"); tether.err != nil {
			return
		}
		tether.path = filepath.Join(tether.dir, "tether")
		out, err := exec.Command("go", "build", "-o", tether.path, "github.com/tether/tether/cmd/tether").CombinedOutput()
		if err != nil {
			tether.err = fmt.Errorf("building tether: %v\n%s", err, out)
		}
	})
	if tether.err != nil {
		t.Fatal(tether.err)
	}
	return tether.path
}

func runDistributed(t *testing.T, cfg DistributedConfig) Report {
	t.Helper()
	cfg.Binary = tetherBinary(t)
	cfg.Log = testLog{t}
	rep, err := RunDistributed(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d break %q: %d kills %v, %d restarts, %d faults %v, %d mount calls, %d violations, converged=%v in %.2fs",
		cfg.Seed, cfg.Break, rep.Kills, rep.KillsByKind, rep.Restarts, rep.Faults, rep.FaultsByKind, rep.MountCalls, rep.Violations, rep.Converged, rep.ConvergeSeconds)
	return rep
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Logf("%s", b)
	return len(b), nil
}

func TestDistributedPlanIsDeterministic(t *testing.T) {
	a, b := DistributedPlan(7, 10*time.Second, 10, 3), DistributedPlan(7, 10*time.Second, 10, 3)
	if !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("same seed, different plans (%d and %d actions)", len(a), len(b))
	}
	if reflect.DeepEqual(a, DistributedPlan(8, 10*time.Second, 10, 3)) {
		t.Fatal("different seeds, same plan")
	}
	kinds := map[string]bool{}
	for _, x := range DistributedPlan(7, 5*time.Minute, 10, 3) {
		kinds[x.Kind] = true
	}
	for _, w := range distributedWeights {
		if !kinds[w.kind] {
			t.Errorf("a 5 min plan has no %s", w.kind)
		}
	}
}

// A short chaos run across processes: zero violations, converged.
func TestDistributedChaosHoldsInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet of processes")
	}
	rep := runDistributed(t, DistributedConfig{Config: Config{Seed: 2, Duration: 8 * time.Second, Volumes: 12, Nodes: 3}})
	if rep.Violations != 0 || !rep.Converged {
		t.Fatalf("%d violations, converged=%v:\n%s", rep.Violations, rep.Converged, details(rep))
	}
	if rep.Kills == 0 || rep.MountCalls == 0 {
		t.Fatalf("nothing happened: %d kills, %d mount calls", rep.Kills, rep.MountCalls)
	}
}

// The checker across processes counts only if it can fail: a rule broken
// behind tether's back, through the permissive cloud, is reported with
// the volume, the node and the volume's history.
func TestDistributedBrokenRulesAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet of processes per rule")
	}
	for _, inv := range DistributedBreaks {
		t.Run(inv, func(t *testing.T) {
			// Its violations are the point: the fleet's directory goes.
			rep := runDistributed(t, DistributedConfig{Controllers: 2,
				Config: Config{Seed: 3, Duration: 2 * time.Second, Volumes: 8, Nodes: 3, Break: inv, Converge: 20 * time.Second, DataDir: t.TempDir()}})
			for _, v := range rep.Found {
				if v.Invariant == inv && v.Volume != "" && v.Node != "" && len(v.History) > 0 {
					t.Logf("caught: %s", v)
					return
				}
			}
			t.Fatalf("breaking %s was not reported (%d mount calls); found:\n%s", inv, rep.MountCalls, details(rep))
		})
	}
}
