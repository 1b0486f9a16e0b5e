package simulation

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"
)

// Run simulates the cluster of cfg under the faults drawn from seed and
// checks the invariants. The same seed and config give the same Result.
// After a violation the run is repeated with its trace recorded, then its
// fault plan is shrunk (Config.ShrinkRuns).
func Run(seed uint64, cfg Config) Result {
	res := runOnce(seed, cfg, noFilter, cfg.Trace)
	if len(res.Violations) == 0 {
		return res
	}
	if !cfg.Trace {
		res = runOnce(seed, cfg, noFilter, true)
	}
	if cfg.ShrinkRuns > 0 {
		shrink(seed, cfg, &res)
	}
	return res
}

func runOnce(seed uint64, cfg Config, f filter, tracing bool) Result {
	w := newWorld(seed, cfg, f, tracing)
	w.run()
	res := w.result()
	res.applied, res.appliedAt = w.plan.ids, w.plan.times
	for i := range res.Violations {
		res.Violations[i].History = history(res.Trace, res.Violations[i])
	}
	return res
}

// shrink looks for a smaller fault plan whose run breaks the same
// invariant, within cfg.ShrinkRuns re-runs: first the earliest time after
// which no fault is needed (binary search over the decisions' times), then
// each remaining decision turned off in turn, oldest first, keeping every
// removal after which the invariant still breaks, in passes until one
// removes nothing. A decision is named by
// its site and its number there, so turning one off leaves the others'
// names in place.
func shrink(seed uint64, cfg Config, res *Result) {
	inv := res.Violations[0].Invariant
	runs := 0
	try := func(f filter) bool {
		runs++
		r := runOnce(seed, cfg, f, false)
		return len(r.Violations) > 0 && r.Violations[0].Invariant == inv
	}
	ids, at := res.applied, res.appliedAt
	cutAt := func(k int) time.Duration { // keep the first k applied decisions
		if k == len(at) {
			return -1
		}
		return at[k]
	}
	lo, hi := 0, len(ids)
	for lo < hi && runs < cfg.ShrinkRuns {
		mid := (lo + hi) / 2
		if try(filter{cut: cutAt(mid)}) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	best := filter{cut: cutAt(hi), off: map[string]bool{}}
	for removed := true; removed && runs < cfg.ShrinkRuns; {
		removed = false
		for _, id := range ids[:hi] {
			if best.off[id] || runs >= cfg.ShrinkRuns {
				continue
			}
			next := filter{cut: best.cut, off: maps.Clone(best.off)}
			next.off[id] = true
			if try(next) {
				best, removed = next, true
			}
		}
	}
	small := runOnce(seed, cfg, best, true)
	res.ShrinkRuns = runs
	res.MinimalPlan = small.Plan
	if len(small.Violations) > 0 {
		res.MinimalViolation = small.Violations[0]
		res.MinimalTrace = small.Violations[0].History
	}
}

// history keeps the trace lines about the violation's volume or node, and
// the faults, up to the violation: the last maxHistory of them. Heartbeats
// and wakes are left out, and a line that repeats one of the few before it
// (periodic reports and their answers) is counted, not repeated.
func history(trace []string, v Violation) []string {
	const maxHistory, window = 150, 8
	var out, recent []string
	repeats := 0
	for _, line := range trace {
		if strings.Contains(line, "HeartbeatReceived") || strings.HasSuffix(line, "<- wake") {
			continue
		}
		if !strings.Contains(line, "FAULT") && !strings.Contains(line, "VIOLATION") && !strings.Contains(line, "CALM") &&
			!hasWord(line, v.Volume) && !hasWord(line, v.Node) {
			continue
		}
		key := periodic.ReplaceAllString(line[strings.IndexByte(line, 's')+1:], "")
		if slicesContains(recent, key) {
			repeats++
			continue
		}
		if recent = append(recent, key); len(recent) > window {
			recent = recent[1:]
		}
		if repeats > 0 {
			out = append(out, fmt.Sprintf("   (%d repeated lines)", repeats))
			repeats = 0
		}
		out = append(out, line)
	}
	if len(out) > maxHistory {
		out = append([]string{fmt.Sprintf("... %d earlier lines", len(out)-maxHistory)}, out[len(out)-maxHistory:]...)
	}
	return out
}

// periodic matches what changes between repeats of a periodic message.
var periodic = regexp.MustCompile(`Num:\d+ |Pass:\d+ |AsOf:[^}]*`)

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// hasWord reports whether s holds w delimited by non-alphanumerics ("v1"
// is not in "v12").
func hasWord(s, w string) bool {
	if w == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		if (start == 0 || !alnum(s[start-1])) && (end == len(s) || !alnum(s[end])) {
			return true
		}
		i = start + 1
	}
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Report describes a failed run for humans: the seed, the violation, the
// shrunk plan and its trace.
func (r Result) Report() string {
	if len(r.Violations) == 0 {
		return fmt.Sprintf("seed %d: ok (%d steps, %d faults, %d kills, converged %s after the calm began)", r.Seed, r.Steps, r.Faults, r.Kills, r.ConvergedAt)
	}
	var b strings.Builder
	v := r.Violations[0]
	fmt.Fprintf(&b, "seed %d: %s violated at %s (volume %s, node %s): %s\n", r.Seed, v.Invariant, v.Time, v.Volume, v.Node, v.Detail)
	fmt.Fprintf(&b, "original plan: %d decisions; shrunk in %d re-runs to %d:\n", len(r.Plan), r.ShrinkRuns, len(r.MinimalPlan))
	for _, l := range r.MinimalPlan {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if m := r.MinimalViolation; m.Invariant != "" {
		fmt.Fprintf(&b, "minimal run: %s violated at %s (volume %s, node %s): %s\ntrace (lines about %s and %s, and the faults):\n",
			m.Invariant, m.Time, m.Volume, m.Node, m.Detail, m.Volume, m.Node)
		for _, l := range r.MinimalTrace {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	return b.String()
}
