package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
)

// These tests drive HandleFailure directly with a fake Supervisor: no actor
// system, no goroutines, every delay exact.

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const capDelay = 2*time.Minute + 2*time.Second

// fakeSupervisor records RestartChildren calls; any other directive fails
// the test.
type fakeSupervisor struct {
	t        *testing.T
	mu       sync.Mutex
	restarts []string
}

func (s *fakeSupervisor) Children() []*actor.PID { return nil }

func (s *fakeSupervisor) EscalateFailure(reason, _ interface{}) {
	s.t.Errorf("EscalateFailure(%v): the strategy must never escalate", reason)
}

func (s *fakeSupervisor) StopChildren(pids ...*actor.PID) {
	s.t.Errorf("StopChildren(%v): the strategy must never stop", pids)
}

func (s *fakeSupervisor) ResumeChildren(pids ...*actor.PID) {
	s.t.Errorf("ResumeChildren(%v): the strategy must only restart", pids)
}

func (s *fakeSupervisor) RestartChildren(pids ...*actor.PID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pids {
		s.restarts = append(s.restarts, p.GetId())
	}
}

func (s *fakeSupervisor) restarted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.restarts)
}

type decision struct {
	child    string
	failures int
	delay    time.Duration
}

// newTestStrategy returns a strategy on a fake clock with no jitter draw
// (u = 0) that reports its decisions into the returned slice.
func newTestStrategy(t *testing.T, mutate func(*Config)) (*strategy, *clock.Fake, *[]decision) {
	t.Helper()
	fc := clock.NewFake(epoch)
	var decisions []decision
	log := logrus.New()
	log.SetOutput(io.Discard)
	cfg := Config{
		Policy: backoff.Default,
		Quiet:  5 * time.Minute,
		Clock:  fc,
		Rand:   func() float64 { return 0 },
		Log:    log,
		OnRestart: func(child *actor.PID, failures int, delay time.Duration, _ interface{}) {
			decisions = append(decisions, decision{child.GetId(), failures, delay})
		},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return NewStrategy(cfg).(*strategy), fc, &decisions
}

// failAndRestart reports a failure of child, checks the restart fires
// exactly after the returned delay, and leaves the clock at the restart.
func failAndRestart(t *testing.T, s *strategy, fc *clock.Fake, sup *fakeSupervisor, child *actor.PID, decisions *[]decision) decision {
	t.Helper()
	before := sup.restarted()
	s.HandleFailure(nil, sup, child, actor.NewRestartStatistics(), "boom", nil)
	d := (*decisions)[len(*decisions)-1]
	fc.Advance(d.delay - time.Nanosecond)
	if got := sup.restarted(); got != before {
		t.Fatalf("restart after %v, before the %v delay", d.delay-time.Nanosecond, d.delay)
	}
	fc.Advance(time.Nanosecond)
	if got := sup.restarted(); got != before+1 {
		t.Fatalf("no restart after the %v delay", d.delay)
	}
	return d
}

func TestDelaysDoubleToCap(t *testing.T) {
	s, fc, decisions := newTestStrategy(t, nil)
	sup := &fakeSupervisor{t: t}
	child := actor.NewPID("local", "child")
	want := []time.Duration{
		500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second,
		capDelay, capDelay, capDelay,
	}
	for i, w := range want {
		d := failAndRestart(t, s, fc, sup, child, decisions)
		if d.delay != w || d.failures != i+1 {
			t.Fatalf("failure %d: got %+v, want delay %v", i+1, d, w)
		}
	}
}

func TestQuietPeriodResetsCount(t *testing.T) {
	tests := []struct {
		name      string
		quietFor  time.Duration // between the restart and the next failure
		wantDelay time.Duration // for the third failure
	}{
		{"failing again just inside the quiet period keeps doubling", 5*time.Minute - time.Nanosecond, 2 * time.Second},
		{"failing after the quiet period starts over", 5 * time.Minute, 500 * time.Millisecond},
		{"long after the quiet period starts over", 24 * time.Hour, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fc, decisions := newTestStrategy(t, nil)
			sup := &fakeSupervisor{t: t}
			child := actor.NewPID("local", "child")
			failAndRestart(t, s, fc, sup, child, decisions)
			failAndRestart(t, s, fc, sup, child, decisions)
			fc.Advance(tt.quietFor)
			if d := failAndRestart(t, s, fc, sup, child, decisions); d.delay != tt.wantDelay {
				t.Fatalf("third failure: delay %v, want %v", d.delay, tt.wantDelay)
			}
		})
	}
}

func TestQuietCountsFromRestartNotFailure(t *testing.T) {
	// With Quiet shorter than the delay, the wait for the restart must not
	// count as quiet time, or the curve would never grow past Quiet.
	s, fc, decisions := newTestStrategy(t, func(c *Config) { c.Quiet = 3 * time.Second })
	sup := &fakeSupervisor{t: t}
	child := actor.NewPID("local", "child")
	var got []time.Duration
	for i := 0; i < 5; i++ {
		got = append(got, failAndRestart(t, s, fc, sup, child, decisions).delay)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
}

func TestChildrenCountedSeparately(t *testing.T) {
	s, fc, decisions := newTestStrategy(t, nil)
	sup := &fakeSupervisor{t: t}
	a, b := actor.NewPID("local", "a"), actor.NewPID("local", "b")
	failAndRestart(t, s, fc, sup, a, decisions)
	failAndRestart(t, s, fc, sup, a, decisions)
	if d := failAndRestart(t, s, fc, sup, b, decisions); d.delay != 500*time.Millisecond || d.child != "b" {
		t.Fatalf("first failure of b: %+v", d)
	}
	if d := failAndRestart(t, s, fc, sup, a, decisions); d.delay != 2*time.Second {
		t.Fatalf("third failure of a: %+v", d)
	}
}

func TestJitterDrawApplied(t *testing.T) {
	s, fc, decisions := newTestStrategy(t, func(c *Config) {
		c.Policy.Jitter = 0.2
		c.Rand = func() float64 { return 0.5 }
	})
	sup := &fakeSupervisor{t: t}
	child := actor.NewPID("local", "child")
	if d := failAndRestart(t, s, fc, sup, child, decisions); d.delay != 550*time.Millisecond {
		t.Fatalf("delay %v, want 550ms", d.delay)
	}
}

func TestForgottenChildrenAreSwept(t *testing.T) {
	s, fc, decisions := newTestStrategy(t, nil)
	sup := &fakeSupervisor{t: t}
	for i := 0; i < 100; i++ {
		s.HandleFailure(nil, sup, actor.NewPID("local", fmt.Sprint("c", i)), nil, "boom", nil)
	}
	if s.tracked() != 100 {
		t.Fatalf("tracked %d children, want 100", s.tracked())
	}
	fc.Advance(10 * time.Minute)
	failAndRestart(t, s, fc, sup, actor.NewPID("local", "last"), decisions)
	if s.tracked() != 1 {
		t.Fatalf("tracked %d children after the quiet period, want 1", s.tracked())
	}
	if sup.restarted() != 101 {
		t.Fatalf("%d restarts, want 101", sup.restarted())
	}
}

func TestConcurrentFailures(t *testing.T) {
	// As a guardian, HandleFailure runs on each failing child's goroutine.
	fc := clock.NewFake(epoch)
	log := logrus.New()
	log.SetOutput(io.Discard)
	s := NewStrategy(Config{Clock: fc, Log: log})
	sup := &fakeSupervisor{t: t}
	const children, failures = 8, 20
	var wg sync.WaitGroup
	for c := 0; c < children; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := actor.NewPID("local", fmt.Sprint("c", c))
			for i := 0; i < failures; i++ {
				s.HandleFailure(nil, sup, pid, nil, "boom", nil)
			}
		}()
	}
	wg.Wait()
	if fc.Pending() != children*failures {
		t.Fatalf("%d restarts scheduled, want %d", fc.Pending(), children*failures)
	}
	fc.Advance(time.Hour)
	if sup.restarted() != children*failures {
		t.Fatalf("%d restarts, want %d", sup.restarted(), children*failures)
	}
}

func TestDefaults(t *testing.T) {
	s := NewStrategy(Config{}).(*strategy)
	want := backoff.Default
	want.Jitter = 0.2
	if s.cfg.Policy != want {
		t.Fatalf("policy %+v, want %+v", s.cfg.Policy, want)
	}
	if s.cfg.Quiet != 5*time.Minute || s.cfg.Clock == nil || s.cfg.Rand == nil || s.cfg.Log == nil {
		t.Fatalf("defaults not filled: %+v", s.cfg)
	}
	if u := s.cfg.Rand(); u < 0 || u >= 1 {
		t.Fatalf("default Rand drew %v", u)
	}
}

func TestLogsEachFailure(t *testing.T) {
	var buf bytes.Buffer
	log := logrus.New()
	log.SetOutput(&buf)
	log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableColors: true})
	s, _, _ := newTestStrategy(t, func(c *Config) { c.Log = log })
	s.HandleFailure(nil, &fakeSupervisor{t: t}, actor.NewPID("local", "child"), nil, "disk on fire", nil)
	line := buf.String()
	for _, want := range []string{"level=warning", "child=local/child", `reason="disk on fire"`, "failures=1", "delay=500ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}
