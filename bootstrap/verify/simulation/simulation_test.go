package simulation

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seeds     = flag.Int("sim.seeds", 300, "how many seeds TestSimulationSeeds runs")
	firstSeed = flag.Uint64("sim.first", 1, "the first seed TestSimulationSeeds runs")
	shrinkN   = flag.Int("sim.shrink", 3, "how many failing seeds (one per invariant first) TestSimulationSeeds shrinks and prints")
	traceOut  = flag.String("sim.trace", "", "write the full trace of the first failing seed to this file")
)

// stats sums up many runs.
type stats struct {
	runs, steps, kills, faults, forced, converged int
	convergedIn                                   time.Duration
}

func (s *stats) add(r Result) {
	s.runs++
	s.steps += r.Steps
	s.kills += r.Kills
	s.faults += r.Faults
	s.forced += r.ForceDetaches
	if r.ConvergedAt >= 0 {
		s.converged++
		s.convergedIn = max(s.convergedIn, r.ConvergedAt)
	}
}

func (s stats) String() string {
	return fmt.Sprintf("%d runs: %d steps, %d kills, %d fault and churn decisions, %d force detaches; %d converged after the calm, the slowest in %s",
		s.runs, s.steps, s.kills, s.faults, s.forced, s.converged, s.convergedIn.Round(time.Millisecond))
}

// runSeeds runs seeds [first, first+n) on every CPU and returns the
// results that violated an invariant, by seed, and the stats of all.
func runSeeds(first uint64, n int, cfg Config) ([]Result, stats) {
	var (
		mu     sync.Mutex
		failed []Result
		all    stats
		wg     sync.WaitGroup
	)
	next := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed := range next {
				r := Run(seed, cfg)
				mu.Lock()
				all.add(r)
				if len(r.Violations) > 0 {
					failed = append(failed, r)
				}
				mu.Unlock()
			}
		})
	}
	for s := first; s < first+uint64(n); s++ {
		next <- s
	}
	close(next)
	wg.Wait()
	slices.SortFunc(failed, func(a, b Result) int { return cmp.Compare(a.Seed, b.Seed) })
	return failed, all
}

// TestSimulationSeeds runs many seeds with every fault on. On failure it
// prints, per invariant, the seeds that broke it, then the shrunk plan and
// trace of the first failing seeds (-sim.shrink of them).
func TestSimulationSeeds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ShrinkRuns = 0 // shrink only the failures reported below
	start := time.Now()
	failed, all := runSeeds(*firstSeed, *seeds, cfg)
	t.Logf("%d seeds from %d in %s on %d CPUs: %d violated an invariant", *seeds, *firstSeed, time.Since(start).Round(time.Millisecond), runtime.GOMAXPROCS(0), len(failed))
	t.Logf("%s", all)
	if len(failed) == 0 {
		return
	}
	byInv := map[string][]uint64{}
	for _, r := range failed {
		inv := r.Violations[0].Invariant
		byInv[inv] = append(byInv[inv], r.Seed)
	}
	for _, inv := range sortedKeys(byInv) {
		t.Errorf("%s broken by %d seeds: %v", inv, len(byInv[inv]), byInv[inv])
	}
	cfg.ShrinkRuns = DefaultConfig().ShrinkRuns
	for _, seed := range firstPerInvariant(failed, *shrinkN) {
		r := Run(seed, cfg)
		t.Errorf("%s", r.Report())
		if *traceOut != "" {
			writeTrace(t, *traceOut, r.Trace)
			*traceOut = ""
		}
	}
}

// firstPerInvariant picks up to n failing seeds: the first of each
// invariant, then the next ones.
func firstPerInvariant(failed []Result, n int) []uint64 {
	var out []uint64
	seen := map[string]bool{}
	for _, r := range failed {
		if inv := r.Violations[0].Invariant; !seen[inv] && len(out) < n {
			seen[inv] = true
			out = append(out, r.Seed)
		}
	}
	for _, r := range failed {
		if len(out) >= n {
			break
		}
		if !slices.Contains(out, r.Seed) {
			out = append(out, r.Seed)
		}
	}
	return out
}

func writeTrace(t *testing.T, path string, trace []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(trace, "\n")+"\n"), 0o644); err != nil {
		t.Errorf("writing the trace: %v", err)
		return
	}
	t.Logf("full trace written to %s", path)
}

func TestSameSeedSameTrace(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace = true
	cfg.ShrinkRuns = 0
	for _, seed := range []uint64{1, 7, 42, 238, 1172} {
		a, b := Run(seed, cfg), Run(seed, cfg)
		if len(a.Trace) < 100 {
			t.Fatalf("seed %d: a trace of %d lines: nothing happened", seed, len(a.Trace))
		}
		if !slices.Equal(a.Trace, b.Trace) || !slices.Equal(a.Plan, b.Plan) || a.Steps != b.Steps {
			i := firstDifference(a.Trace, b.Trace)
			t.Fatalf("seed %d: two runs differ at line %d:\n%s\n%s", seed, i, lineAt(a.Trace, i), lineAt(b.Trace, i))
		}
		if fmt.Sprint(a.Violations) != fmt.Sprint(b.Violations) {
			t.Fatalf("seed %d: violations differ: %v / %v", seed, a.Violations, b.Violations)
		}
	}
	if a, b := Run(1, cfg), Run(2, cfg); slices.Equal(a.Trace, b.Trace) {
		t.Fatal("seeds 1 and 2 gave the same trace")
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func lineAt(tr []string, i int) string {
	if i < len(tr) {
		return tr[i]
	}
	return "<end>"
}
