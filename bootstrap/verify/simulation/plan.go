package simulation

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"
)

// site is one source of randomness of a run (a link, a volume's cloud
// calls, a node's store writes, the churn, ...), with a stream of its own
// seeded from the run's seed and the site's name, so that what happens at
// one site does not shift the draws of another. Every visit of a site
// draws the same number of values whatever the outcome, so that turning a
// decision off leaves the draws of the site's later visits in place.
type site struct {
	name  string
	r     *rand.Rand
	fired int // decisions that fired here, applied or not
}

func (s *site) float() float64 { return s.r.Float64() }

// index maps a draw to [0, n).
func (s *site) index(n int) int {
	if n <= 1 {
		s.r.Float64()
		return 0
	}
	return int(s.r.Float64() * float64(n))
}

func (s *site) uniform(lo, hi time.Duration) time.Duration {
	x := s.r.Float64()
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(x*float64(hi-lo))
}

func (s *site) exp(mean time.Duration) time.Duration {
	return time.Duration(s.r.ExpFloat64() * float64(mean))
}

// filter selects the decisions a run applies: a decision is named by its
// site and its number there ("link agent/n1>node/n1#3").
type filter struct {
	cut time.Duration   // decisions at or after this time are not applied (<0: no cut)
	off map[string]bool // decisions not applied
}

var noFilter = filter{cut: -1}

// plan draws the run's fault and churn decisions and records those
// applied. Shrinking a violating run re-runs it with a filter.
type plan struct {
	seed  uint64
	f     filter
	sites map[string]*site
	pairs map[pairSite]*site
	last  string // the decision just taken
	calm  bool   // no decision fires any more
	log   []string
	ids   []string
	times []time.Duration
}

type pairSite struct {
	kind string
	p    pair
}

func newPlan(seed uint64, f filter) *plan {
	return &plan{seed: seed, f: f, sites: map[string]*site{}, pairs: map[pairSite]*site{}}
}

func (p *plan) site(name string) *site {
	s := p.sites[name]
	if s == nil {
		h := fnv.New64a()
		h.Write([]byte(name))
		s = &site{name: name, r: rand.New(rand.NewPCG(p.seed, h.Sum64()))}
		p.sites[name] = s
	}
	return s
}

// pairSite is the site of the messages from one actor to another.
func (p *plan) pairSite(kind string, from, to addr) *site {
	key := pairSite{kind, pair{from, to}}
	s := p.pairs[key]
	if s == nil {
		s = p.site(kind + " " + from.String() + ">" + to.String())
		p.pairs[key] = s
	}
	return s
}

// incarnationBase is what the shells number an incarnation's operations
// (reports, passes) from: random, low 32 bits clear.
func (w *world) incarnationBase(a addr) uint64 {
	return w.plan.site("incarnation "+a.String()).r.Uint64() &^ 0xffffffff
}

// chance draws one value at s and reports whether a fault of probability
// prob fires there now and is applied.
func (w *world) chance(s *site, prob float64) bool {
	x := s.r.Float64()
	if w.plan.calm || x >= prob {
		return false
	}
	return w.take(s)
}

// take numbers a decision that fired at s and reports whether it is
// applied.
func (w *world) take(s *site) bool {
	id := s.name + "#" + strconv.Itoa(s.fired)
	s.fired++
	f := w.plan.f
	if (f.cut >= 0 && w.now.Sub(epoch) >= f.cut) || f.off[id] {
		return false
	}
	w.plan.last = id
	return true
}

// fault records the decision just taken.
func (w *world) fault(format string, args ...any) {
	p := w.plan
	line := fmt.Sprintf("[%s] %s", p.last, fmt.Sprintf(format, args...))
	p.log = append(p.log, w.stamp()+" "+line)
	p.ids = append(p.ids, p.last)
	p.times = append(p.times, w.now.Sub(epoch))
	w.faults++
	w.tracef("FAULT %s", line)
}
