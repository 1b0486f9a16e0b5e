package simulation

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Every checker is proven through the simulation: each test breaks one
// rule on purpose (Config.Break, one at a time) and asserts that the
// simulation reports that invariant, naming a volume and a node, in most of
// a few seeds whose runs are clean with nothing broken. The cloud is
// permissive, as by default: nothing but the checkers stands in the way.

// churnOnly is the default config with workload churn and no fault.
func churnOnly() Config {
	cfg := DefaultConfig()
	cfg.Faults = Faults{WorkloadEvery: 20 * time.Second}
	return cfg
}

// expectCaught runs seeds 1..n with cfg clean, then broken by brk, and
// wants inv reported first by at least want of them. The first seed that
// reports it is shrunk (a few re-runs) and must still report it.
func expectCaught(t *testing.T, cfg Config, brk, inv string, n, want int) {
	t.Helper()
	cfg.ShrinkRuns = 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		if r := Run(seed, cfg); len(r.Violations) > 0 {
			t.Fatalf("seed %d, nothing broken: %s", seed, r.Report())
		}
	}
	cfg.Break = brk
	caught := 0
	var others []string
	for seed := uint64(1); seed <= uint64(n); seed++ {
		r := Run(seed, cfg)
		if len(r.Violations) == 0 {
			continue
		}
		v := r.Violations[0]
		if v.Invariant != inv {
			others = append(others, v.Invariant)
			continue
		}
		if v.Volume == "" || v.Node == "" {
			t.Fatalf("seed %d: %s names no volume or node: %+v", seed, inv, v)
		}
		line := "VIOLATION " + inv + " volume " + v.Volume + " node " + v.Node
		if !slices.ContainsFunc(v.History, func(l string) bool { return strings.Contains(l, line) }) {
			t.Fatalf("seed %d: the violation's history does not show it:\n%s", seed, strings.Join(v.History, "\n"))
		}
		if caught++; caught == 1 {
			t.Logf("seed %d: %s (volume %s, node %s) at %s: %s", seed, inv, v.Volume, v.Node, v.Time, v.Detail)
			shrunk := cfg
			shrunk.ShrinkRuns = 20
			if s := Run(seed, shrunk); s.MinimalViolation.Invariant != inv {
				t.Fatalf("seed %d: shrunk to %q, want %s:\n%s", seed, s.MinimalViolation.Invariant, inv, s.Report())
			}
		}
	}
	if caught < want {
		t.Fatalf("Break %q: %s reported by %d of %d seeds (want %d); other invariants: %v", brk, inv, caught, n, want, others)
	}
}

// I1: the volume core attaches an exclusive volume to its new node while
// it is still attached to the old one; the permissive cloud accepts.
func TestBreakI1IsCaught(t *testing.T) {
	expectCaught(t, churnOnly(), "I1", "I1", 10, 5)
}

// I2: the volume and node cores detach a volume the node reports in use;
// or the wiring breaks it (BreakI2): the volume cores are told no node uses
// them, the node cores see every detach request as forced.
func TestBreakI2IsCaught(t *testing.T) {
	t.Run("cores", func(t *testing.T) { expectCaught(t, churnOnly(), "I2", "I2", 10, 8) })
	t.Run("wiring", func(t *testing.T) { expectCaught(t, churnOnly(), "I2-wiring", "I2", 10, 8) })
}

// I3, four ways: the agent's shell reports a volume in use only once
// mounted and tells its core every attached volume is heard in use (the
// agent's side of the rule); the agent acts on a stale status (a cache
// that never forgets a volume once listed), which only a check against
// the status the agent held when it started the mount sees; the shell
// mounts whatever a device path names, attached or not (the cloud's
// side, which needs stale paths: instances that stop and start); the
// agent core's own hook.
func TestBreakI3IsCaught(t *testing.T) {
	t.Run("agent shell reports after mounting", func(t *testing.T) {
		expectCaught(t, churnOnly(), "I3-wiring", "I3", 10, 8)
	})
	t.Run("agent runner acts on a stale status", func(t *testing.T) {
		expectCaught(t, churnOnly(), "I3-stale", "I3", 10, 5)
	})
	t.Run("agent shell trusts device paths", func(t *testing.T) {
		cfg := churnOnly()
		cfg.Faults.FaultEvery = 20 * time.Second
		cfg.Faults.RebootWeight, cfg.Faults.TerminateWeight, cfg.Faults.ReplaceWeight = 2, 1, 1
		expectCaught(t, cfg, "I3-device", "I3", 10, 7)
	})
	t.Run("agent core hook", func(t *testing.T) {
		expectCaught(t, churnOnly(), "I3", "I3", 10, 5)
	})
}

// I4, two ways: the node core answers a detach preparation without
// writing the status first; the production node runner (node_flush.go)
// runs what follows a Persist before the write, which shows when the
// write fails (the write otherwise lands before the detach does).
func TestBreakI4IsCaught(t *testing.T) {
	t.Run("node core", func(t *testing.T) { expectCaught(t, churnOnly(), "I4", "I4", 10, 8) })
	t.Run("node runner", func(t *testing.T) {
		cfg := churnOnly()
		cfg.Faults.PersistFail = 0.5
		expectCaught(t, cfg, "I4-runner", "I4", 10, 5)
	})
}

// I5: the volume core never detaches.
func TestBreakI5IsCaught(t *testing.T) {
	expectCaught(t, churnOnly(), "I5", "I5", 10, 8)
}
