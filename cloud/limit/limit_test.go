package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// fake records when calls reach it and can hold them.
type fake struct {
	mu       sync.Mutex
	at       []time.Time
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	hold     chan struct{} // nil: return at once
}

func (f *fake) enter() {
	f.mu.Lock()
	f.at = append(f.at, time.Now())
	f.mu.Unlock()
	n := f.inFlight.Add(1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.inFlight.Add(-1)
}

func (f *fake) calls() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at...)
}

func (f *fake) InstanceID(context.Context, cloud.NodeName) (cloud.InstanceID, error) {
	f.enter()
	return "i-1", nil
}
func (f *fake) Attach(context.Context, cloud.VolumeID, cloud.InstanceID) (string, error) {
	f.enter()
	return "/dev/x", nil
}
func (f *fake) Detach(context.Context, cloud.VolumeID, cloud.InstanceID) error { f.enter(); return nil }
func (f *fake) VolumesAreAttached(context.Context, map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	f.enter()
	return nil, nil
}
func (f *fake) InstanceVolumes(context.Context, []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	f.enter()
	return nil, nil
}
func (f *fake) BatchSize() int { return 7 }

// However many ask at once, the calls that reach the cloud in any stretch
// of time t are at most Burst + QPS*t, and all of them get there.
func TestRateAndBurst(t *testing.T) {
	f := &fake{}
	cfg := Config{QPS: 200, Burst: 5}
	p := Wrap(f, cfg)
	const n = 45
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Attach(context.Background(), "v", "i"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	at := f.calls()
	if len(at) != n {
		t.Fatalf("%d calls reached the cloud, want %d", len(at), n)
	}
	// The bucket starts full: Burst at once, then one every 1/QPS.
	if took, least := time.Since(start), time.Duration(float64(n-cfg.Burst)/cfg.QPS*float64(time.Second)); took < least {
		t.Fatalf("%d calls took %s, want at least %s at %v QPS with burst %d", n, took, least, cfg.QPS, cfg.Burst)
	}
	for i := range at {
		for j := i + 1; j < len(at); j++ {
			span := at[j].Sub(at[i])
			allowed := cfg.Burst + int(cfg.QPS*span.Seconds()) + 1
			if j-i+1 > allowed {
				t.Fatalf("%d calls within %s, want at most %d", j-i+1, span, allowed)
			}
		}
	}
	if p.BatchSize() != 7 {
		t.Fatalf("BatchSize = %d, want the provider's", p.BatchSize())
	}
}

// No more than MaxInFlight calls wait for the cloud at once; the others
// wait for a slot, and all get through.
func TestMaxInFlight(t *testing.T) {
	f := &fake{hold: make(chan struct{})}
	p := Wrap(f, Config{MaxInFlight: 3})
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Detach(context.Background(), "v", "i"); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.inFlight.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d calls in flight", f.inFlight.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(f.hold)
	wg.Wait()
	if got := f.maxSeen.Load(); got != 3 {
		t.Fatalf("at most %d calls were in flight, want exactly the bound 3", got)
	}
	if got := len(f.calls()); got != 10 {
		t.Fatalf("%d calls reached the cloud, want 10", got)
	}
}

// A call whose turn would come after its deadline is not sent and says
// throttled (no effect, by the Provider contract), and it takes no turn
// from the calls behind it.
func TestTurnAfterDeadlineIsNotSent(t *testing.T) {
	f := &fake{}
	p := Wrap(f, Config{QPS: 1, Burst: 1})
	if _, err := p.InstanceID(context.Background(), "n1"); err != nil { // takes the one token
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	for range 20 {
		_, err := p.Attach(ctx, "v", "i")
		if !errors.Is(err, cloud.ErrThrottled) || cloud.Classify(err) != cloud.KindThrottled {
			t.Fatalf("err = %v, want a throttled error", err)
		}
	}
	if got := len(f.calls()); got != 1 {
		t.Fatalf("%d calls reached the cloud, want only the first", got)
	}
	// The refused calls reserved nothing: the next one waits one interval,
	// not twenty.
	start := time.Now()
	if err := p.Detach(context.Background(), "v", "i"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the next call waited %s: refused calls took turns", took)
	}
}

func TestValidateAndNoLimit(t *testing.T) {
	for _, bad := range []Config{{QPS: -1}, {QPS: 5, Burst: 0}, {MaxInFlight: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
	f := &fake{}
	if p := Wrap(f, Config{}); p != cloud.Provider(f) {
		t.Fatal("a limiter that limits nothing wraps the provider")
	}
}

// resolving is fake with cloud.InstanceResolver.
type resolving struct{ *fake }

func (r resolving) InstanceIDs(_ context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	out := map[cloud.NodeName]cloud.InstanceID{}
	for _, n := range nodes {
		out[n] = cloud.InstanceID("i-" + n)
	}
	return out, nil
}

// InstanceIDs takes one turn for a batch where the provider resolves in
// batches; over one that cannot it says so (errors.ErrUnsupported) and
// takes no turn.
func TestInstanceIDsOneTurn(t *testing.T) {
	f := &fake{}
	p := Wrap(resolving{f}, Config{QPS: 1000, Burst: 1, MaxInFlight: 1}).(cloud.InstanceResolver)
	got, err := p.InstanceIDs(context.Background(), []cloud.NodeName{"a", "b", "c"})
	if err != nil || len(got) != 3 || got["b"] != "i-b" || len(f.calls()) != 1 {
		t.Fatalf("InstanceIDs = %v, %v after %d calls; want 3 nodes in 1 call", got, err, len(f.calls()))
	}
	q := Wrap(&fake{}, Config{QPS: 1000, Burst: 1}).(cloud.InstanceResolver)
	if _, err := q.InstanceIDs(context.Background(), []cloud.NodeName{"a"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("InstanceIDs over a provider without it: %v, want errors.ErrUnsupported", err)
	}
}

// The bucket is read at the limiter's clock: a fake clock that does not
// move refills nothing, and moving it refills one token per 1/QPS, up to
// Burst.
func TestFakeClockDrivesRefills(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := wrap(&fake{}, Config{QPS: 2, Burst: 3}, func() time.Time { return now })
	for i := range 3 {
		if at, ok := l.reserve(time.Time{}); !ok || !at.Equal(now) {
			t.Fatalf("call %d of a full bucket: at %v (ok %v), want now", i, at.Sub(now), ok)
		}
	}
	// Empty: the next token is due in 500ms; a deadline before that is
	// refused and takes nothing.
	if at, ok := l.reserve(now.Add(499 * time.Millisecond)); ok || at.Sub(now) != 500*time.Millisecond {
		t.Fatalf("empty bucket, deadline in 499ms: at +%v ok %v, want refused, due +500ms", at.Sub(now), ok)
	}
	now = now.Add(500 * time.Millisecond) // one token back
	if at, ok := l.reserve(now); !ok || !at.Equal(now) {
		t.Fatalf("after 500ms: at %v ok %v, want one token now", at.Sub(now), ok)
	}
	if _, ok := l.reserve(now); ok {
		t.Fatal("a second call after 500ms got a token: refilled without the clock")
	}
	now = now.Add(time.Hour) // full again, but never more than Burst
	for i := range 3 {
		if at, ok := l.reserve(now); !ok || !at.Equal(now) {
			t.Fatalf("call %d after an hour: at %v ok %v, want now", i, at.Sub(now), ok)
		}
	}
	if at, ok := l.reserve(time.Time{}); !ok || at.Sub(now) != 500*time.Millisecond {
		t.Fatalf("fourth call after an hour: due +%v, want +500ms (burst 3)", at.Sub(now))
	}
}
