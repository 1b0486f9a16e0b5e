package faulty

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tether/tether/cloud"
)

// Method names a cloud.Provider call, for per-method faults and counters.
type Method string

// The provider calls. BatchSize and Listing are not cloud calls: they
// are never delayed, throttled or failed.
const (
	MethodInstanceID         Method = "instance_id"
	MethodAttach             Method = "attach"
	MethodDetach             Method = "detach"
	MethodVolumesAreAttached Method = "volumes_are_attached"
	MethodInstanceVolumes    Method = "instance_volumes"
	MethodInstanceIDs        Method = "instance_ids"
)

// Config sets up Faults. The zero value injects nothing, seeds with 0 and
// reads time.Now.
type Config struct {
	// Seed seeds the generator every rate is drawn from.
	Seed uint64
	// Now is the clock of the throttle; default time.Now.
	Now func() time.Time
	// HangMargin is how long before its deadline a hung call is sent; 0:
	// a tenth of the time left, at most 10ms. A call sent over the network
	// needs more (the remote client's own margin and the trip).
	HangMargin time.Duration
	// Name prefixes the errors it makes ("sim", "chaos"); default "faulty".
	Name string
}

// Faults are the knobs of one cloud's faults, and the generator their
// rates are drawn from. Each setting lasts until the next one; zero turns
// it off. A draw happens only for a knob that is on, so the same seed and
// the same sequence of calls give the same faults. Safe for concurrent use.
type Faults struct {
	now    func() time.Time // immutable
	margin time.Duration    // immutable
	name   string           // immutable

	mu       sync.Mutex
	rng      *rand.Rand
	next     map[Method]failNext
	errRate  map[Method]errorRate
	hang     map[Method]float64
	lose     map[Method]float64
	latency  time.Duration
	throttle *rate.Limiter // nil: unthrottled
}

type failNext struct {
	n    int
	kind cloud.Kind
}

type errorRate struct {
	p    float64
	kind cloud.Kind
}

// New returns knobs all off.
func New(cfg Config) *Faults {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Name == "" {
		cfg.Name = "faulty"
	}
	return &Faults{
		now: cfg.Now, margin: max(cfg.HangMargin, 0), name: cfg.Name,
		rng:  newRand(cfg.Seed),
		next: make(map[Method]failNext), errRate: make(map[Method]errorRate),
		hang: make(map[Method]float64), lose: make(map[Method]float64),
	}
}

// Reseed restarts the generator from seed, as Config.Seed seeds it: for
// knobs whose seed arrives after the calls began (a chaos control's).
func (f *Faults) Reseed(seed uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rng = newRand(seed)
}

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// FailNext makes the next n calls of m fail with an error of that kind
// (the wrapped sentinel, so cloud.Classify returns kind), before any
// effect. It replaces any earlier FailNext of m; n <= 0 cancels it.
// cloud.KindNone (or an unknown kind) injects an unclassified error, which
// cloud.Classify treats as retryable. Calls refused by the throttle or a
// done ctx do not consume an injected failure.
func (f *Faults) FailNext(m Method, n int, kind cloud.Kind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	setKnob(f.next, m, n > 0, failNext{n: n, kind: kind})
}

// SetErrorRate makes each later call of m fail with probability p with an
// error of that kind, before any effect and after any FailNext failure.
// p <= 0 cancels it; p >= 1 fails every call.
func (f *Faults) SetErrorRate(m Method, p float64, kind cloud.Kind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	setKnob(f.errRate, m, p > 0, errorRate{p: min(p, 1), kind: kind})
}

// SetReplyLoss makes each later call of m lose its reply with probability
// p: the call takes effect (or fails), and its caller waits until its
// context ends and gets the context's error, as after a timeout; a caller
// without a deadline gets a "reply lost" error wrapping
// context.DeadlineExceeded at once. p <= 0 cancels it.
func (f *Faults) SetReplyLoss(m Method, p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	setKnob(f.lose, m, p > 0, min(p, 1))
}

// SetHangRate makes each later call of m hang with probability p: it is
// held until the edge of its context's deadline (Config.HangMargin), sent
// then, and its caller gets the context's error. A call without a
// deadline hangs until its context is cancelled and is never sent.
// p <= 0 cancels it.
func (f *Faults) SetHangRate(m Method, p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	setKnob(f.hang, m, p > 0, min(p, 1))
}

// setKnob sets m's knob to v, or turns it off.
func setKnob[V any](knobs map[Method]V, m Method, on bool, v V) {
	if !on {
		delete(knobs, m)
		return
	}
	knobs[m] = v
}

// SetLatency delays every later call by d before it is sent (negative: 0).
func (f *Faults) SetLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = max(d, 0)
}

// SetThrottle refuses calls of any method beyond r a second, after a
// burst of burst (default max(1, int(r))), with an error wrapping
// cloud.ErrThrottled. The new bucket starts full; r <= 0 turns it off.
func (f *Faults) SetThrottle(r float64, burst int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r <= 0 {
		f.throttle = nil
		return
	}
	if burst <= 0 {
		burst = max(1, int(r))
	}
	f.throttle = rate.NewLimiter(rate.Limit(r), burst)
}

// Admit admits one call of m about to be sent: it takes a throttle token
// (or fails with an error wrapping cloud.ErrThrottled, the call not sent)
// and draws whether the call hangs and whether its reply is lost. subject
// describes the call for errors.
func (f *Faults) Admit(m Method, subject string) (Plan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.throttle != nil && !f.throttle.AllowN(f.now(), 1) {
		return Plan{}, fmt.Errorf("%s: %s %s: token bucket empty: %w", f.name, m, subject, cloud.ErrThrottled)
	}
	p := Plan{Latency: f.latency, margin: f.margin, name: f.name, method: m}
	if r, ok := f.hang[m]; ok {
		p.Hang = f.rng.Float64() < r
	}
	if r, ok := f.lose[m]; ok {
		p.Lose = f.rng.Float64() < r
	}
	return p, nil
}

// Injected returns the injected error of this call of m, drawn when the
// call is about to take effect: FailNext's, then SetErrorRate's; nil if
// none.
func (f *Faults) Injected(m Method, subject string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fn, ok := f.next[m]; ok {
		if fn.n <= 1 {
			delete(f.next, m)
		} else {
			f.next[m] = failNext{n: fn.n - 1, kind: fn.kind}
		}
		return f.injectedError(m, subject, fn.kind)
	}
	if r, ok := f.errRate[m]; ok && f.rng.Float64() < r.p {
		return f.injectedError(m, subject, r.kind)
	}
	return nil
}

func (f *Faults) injectedError(m Method, subject string, kind cloud.Kind) error {
	sentinel := kind.Sentinel()
	if sentinel == nil {
		return fmt.Errorf("%s: %s %s: injected unclassified failure", f.name, m, subject)
	}
	return fmt.Errorf("%s: %s %s: injected failure: %w", f.name, m, subject, sentinel)
}
