package supervisor

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
)

// Config configures NewStrategy. Zero fields take their DefaultConfig value.
type Config struct {
	// Policy is the restart delay curve; the zero Policy means
	// DefaultConfig().Policy.
	Policy backoff.Policy
	// Quiet is how long a restarted child must run without failing before
	// its failure count resets. It is measured from the scheduled restart,
	// not from the failure, so a long delay never counts as quiet time.
	Quiet time.Duration
	// Clock reads the time and schedules the delayed restarts.
	Clock clock.Clock
	// Rand draws the jitter fraction in [0, 1). It may be called from
	// several goroutines at once.
	Rand func() float64
	// OnRestart, if set, is called for every failure once the restart is
	// decided and before it is scheduled, on the supervisor's goroutine
	// (for a guardian, the failing child's). For metrics, logs and tests.
	OnRestart func(child *actor.PID, failures int, delay time.Duration, reason interface{})
	// Log receives one warning per failure.
	Log logrus.FieldLogger
}

// DefaultConfig returns backoff.Default with 20% jitter (actors that fail
// together, say in a cloud outage, restart spread out), a five-minute quiet
// period, the real clock, math/rand/v2 and the standard logrus logger.
func DefaultConfig() Config {
	p := backoff.Default
	p.Jitter = 0.2
	return Config{
		Policy: p,
		Quiet:  5 * time.Minute,
		Clock:  clock.Real(),
		Rand:   rand.Float64,
		Log:    logrus.StandardLogger(),
	}
}

// NewStrategy returns a supervisor strategy that restarts every failing
// child after the backoff delay of its consecutive failures. While it waits
// the child's mailbox stays suspended: user messages queue up and are
// processed after the restart; system messages (Stop) still go through.
// One strategy may supervise many parents, or be a guardian.
//
// Proto.Actor's NewExponentialBackoffStrategy is linear, uncapped, with
// nanoseconds of jitter, and calls time.AfterFunc directly; this one
// schedules restarts on an injected clock.Clock and counts failures
// itself, because actor.RestartStatistics reads the wall clock and keeps a
// timestamp per failure forever.
func NewStrategy(cfg Config) actor.SupervisorStrategy {
	def := DefaultConfig()
	if cfg.Policy == (backoff.Policy{}) {
		cfg.Policy = def.Policy
	}
	if cfg.Quiet <= 0 {
		cfg.Quiet = def.Quiet
	}
	if cfg.Clock == nil {
		cfg.Clock = def.Clock
	}
	if cfg.Rand == nil {
		cfg.Rand = def.Rand
	}
	if cfg.Log == nil {
		cfg.Log = def.Log
	}
	return &strategy{cfg: cfg, children: make(map[string]*childState)}
}

type strategy struct {
	cfg Config

	mu        sync.Mutex
	children  map[string]*childState // by pidKey; only children that failed within about 2*Quiet
	lastSweep time.Time
}

// childState counts the consecutive failures of one child.
type childState struct {
	failures  int
	quietFrom time.Time // the scheduled restart; quiet time counts from here
}

var _ actor.SupervisorStrategy = (*strategy)(nil)

// HandleFailure schedules the child's restart after its backoff delay. It
// runs on the supervising parent's goroutine, or for a guardian on the
// failing child's, so it must not block: the restart is a timer.
func (s *strategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason interface{}, _ interface{}) {
	failures, delay := s.record(pidKey(child), s.cfg.Clock.Now(), s.cfg.Rand())

	s.cfg.Log.WithFields(logrus.Fields{
		"child":    pidKey(child),
		"reason":   reason,
		"failures": failures,
		"delay":    delay,
	}).Warn("supervisor: actor failed, restart scheduled")
	if system != nil {
		system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: actor.RestartDirective})
	}
	if s.cfg.OnRestart != nil {
		s.cfg.OnRestart(child, failures, delay, reason)
	}
	s.cfg.Clock.AfterFunc(delay, func() { sup.RestartChildren(child) })
}

// record counts one failure of the child at now and returns its
// consecutive failures and the restart delay.
func (s *strategy) record(key string, now time.Time, u float64) (int, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)

	st := s.children[key]
	if st == nil || now.Sub(st.quietFrom) >= s.cfg.Quiet {
		st = &childState{}
		s.children[key] = st
	}
	if st.failures < math.MaxInt {
		st.failures++
	}
	delay := s.cfg.Policy.Delay(st.failures, u)
	st.quietFrom = now.Add(delay)
	return st.failures, delay
}

// sweepLocked forgets children that have been quiet for Quiet, at most once
// per Quiet, so the map holds only recent failures and a failure costs O(1)
// amortized. s.mu must be held.
func (s *strategy) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < s.cfg.Quiet {
		return
	}
	s.lastSweep = now
	for k, st := range s.children {
		if now.Sub(st.quietFrom) >= s.cfg.Quiet {
			delete(s.children, k)
		}
	}
}

// tracked returns how many children the strategy remembers (for tests).
func (s *strategy) tracked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.children)
}

// pidKey names a child by address and id. Proto.Actor reuses the id of a
// named child that is spawned again, which then inherits the failure count
// until it has been quiet: a respawned crashing actor keeps backing off.
func pidKey(pid *actor.PID) string {
	if pid == nil {
		return "<nil>"
	}
	return pid.GetAddress() + "/" + pid.GetId()
}
