package clock

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// recorder collects the names of fired timers and the clock reading at
// which each fired.
type recorder struct {
	mu    sync.Mutex
	fired []string
	at    []time.Duration
}

func (r *recorder) fn(f *Fake, name string) func() {
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.fired = append(r.fired, name)
		r.at = append(r.at, f.Now().Sub(epoch))
	}
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.fired...)
}

func TestFakeFiresInDeadlineOrder(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	f.AfterFunc(3*time.Second, r.fn(f, "c"))
	f.AfterFunc(1*time.Second, r.fn(f, "a"))
	f.AfterFunc(2*time.Second, r.fn(f, "b1"))
	f.AfterFunc(2*time.Second, r.fn(f, "b2")) // same deadline: creation order
	f.AfterFunc(10*time.Second, r.fn(f, "late"))

	f.Advance(3 * time.Second)

	if got, want := r.names(), []string{"a", "b1", "b2", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second}; !reflect.DeepEqual(r.at, want) {
		t.Fatalf("Now during callbacks %v, want %v", r.at, want)
	}
	if got := f.Now(); !got.Equal(epoch.Add(3 * time.Second)) {
		t.Fatalf("Now = %v after advance", got)
	}
	if got := f.Pending(); got != 1 {
		t.Fatalf("Pending = %d, want 1", got)
	}
	if d, ok := f.NextDeadline(); !ok || !d.Equal(epoch.Add(10*time.Second)) {
		t.Fatalf("NextDeadline = %v, %v", d, ok)
	}
}

func TestFakeBoundaries(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	f.AfterFunc(time.Second, r.fn(f, "x"))

	f.Advance(time.Second - time.Nanosecond)
	if got := r.names(); len(got) != 0 {
		t.Fatalf("fired %v before deadline", got)
	}
	f.Advance(time.Nanosecond)
	if got := r.names(); !reflect.DeepEqual(got, []string{"x"}) {
		t.Fatalf("fired %v at deadline", got)
	}
	f.Advance(time.Hour)
	if got := r.names(); len(got) != 1 {
		t.Fatalf("timer fired twice: %v", got)
	}
}

func TestFakeNonPositiveDelayFiresOnNextAdvance(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	f.AfterFunc(0, r.fn(f, "zero"))
	f.AfterFunc(-time.Second, r.fn(f, "negative"))
	if got := r.names(); len(got) != 0 {
		t.Fatalf("fired %v inside AfterFunc", got)
	}
	if f.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", f.Pending())
	}
	f.Advance(0)
	if got, want := r.names(), []string{"zero", "negative"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if !f.Now().Equal(epoch) {
		t.Fatalf("Advance(0) moved the clock to %v", f.Now())
	}
}

func TestFakeStop(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	a := f.AfterFunc(time.Second, r.fn(f, "a"))
	b := f.AfterFunc(2*time.Second, r.fn(f, "b"))

	if !a.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if a.Stop() {
		t.Fatal("second Stop returned true")
	}
	if f.Pending() != 1 {
		t.Fatalf("Pending = %d, want 1", f.Pending())
	}
	f.Advance(5 * time.Second)
	if got := r.names(); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("fired %v, want [b]", got)
	}
	if b.Stop() {
		t.Fatal("Stop of a fired timer returned true")
	}
	if _, ok := f.NextDeadline(); ok {
		t.Fatal("NextDeadline reported a timer after all fired")
	}
}

func TestFakeStopFromEarlierCallback(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	var later Timer
	f.AfterFunc(time.Second, func() {
		r.fn(f, "first")()
		if !later.Stop() {
			t.Error("Stop from a callback returned false")
		}
	})
	later = f.AfterFunc(2*time.Second, r.fn(f, "later"))
	f.Advance(3 * time.Second)
	if got := r.names(); !reflect.DeepEqual(got, []string{"first"}) {
		t.Fatalf("fired %v, want [first]", got)
	}
}

func TestFakeNestedTimers(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	// A chain: each callback schedules the next one second later.
	var chain func(n int) func()
	chain = func(n int) func() {
		return func() {
			r.fn(f, "chain")()
			if n > 1 {
				f.AfterFunc(time.Second, chain(n-1))
			}
		}
	}
	f.AfterFunc(time.Second, chain(5))
	f.AfterFunc(0, func() {
		f.AfterFunc(0, r.fn(f, "immediate-child"))
	})

	f.Advance(3 * time.Second)
	want := []string{"immediate-child", "chain", "chain", "chain"}
	if got := r.names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if d, ok := f.NextDeadline(); !ok || !d.Equal(epoch.Add(4*time.Second)) {
		t.Fatalf("NextDeadline = %v, %v; want 4s", d, ok)
	}
	f.Advance(10 * time.Second)
	if got := len(r.names()); got != 6 {
		t.Fatalf("fired %d callbacks in total, want 6", got)
	}
}

func TestFakeCallbackMayUseClockWithoutDeadlock(t *testing.T) {
	f := NewFake(epoch)
	var mu sync.Mutex
	var seen time.Time
	f.AfterFunc(time.Second, func() {
		mu.Lock()
		defer mu.Unlock()
		seen = f.Now()
		_ = f.Pending()
		_, _ = f.NextDeadline()
	})
	f.Advance(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if !seen.Equal(epoch.Add(time.Second)) {
		t.Fatalf("callback saw %v", seen)
	}
}

func TestFakeConcurrentUse(t *testing.T) {
	f := NewFake(epoch)
	const workers, each = 8, 50
	var (
		mu      sync.Mutex
		fired   int
		stopped int
		wg      sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				tm := f.AfterFunc(time.Duration(i)*time.Millisecond, func() {
					mu.Lock()
					fired++
					mu.Unlock()
				})
				if i%10 == 9 && tm.Stop() {
					mu.Lock()
					stopped++
					mu.Unlock()
				}
				_ = f.Now()
			}
		}()
	}
	// Advance concurrently with registration; the final Advance below runs
	// after every registration, so every unstopped timer fires exactly once.
	advancerDone := make(chan struct{})
	go func() {
		defer close(advancerDone)
		for i := 0; i < 20; i++ {
			f.Advance(time.Millisecond)
		}
	}()
	wg.Wait()
	<-advancerDone
	f.Advance(time.Second)

	mu.Lock()
	defer mu.Unlock()
	// A Stop may lose the race with a concurrent Advance; either way each
	// timer is accounted for exactly once.
	if f.Pending() != 0 {
		t.Fatalf("Pending = %d after final advance", f.Pending())
	}
	if fired+stopped != workers*each {
		t.Fatalf("fired %d + stopped %d != %d timers", fired, stopped, workers*each)
	}
}

func TestFakeBlockUntil(t *testing.T) {
	f := NewFake(epoch)
	if f.BlockUntil(1, time.Millisecond) {
		t.Fatal("BlockUntil(1) succeeded with no timers")
	}
	if !f.BlockUntil(0, 0) {
		t.Fatal("BlockUntil(0) failed")
	}

	registered := make(chan struct{})
	go func() {
		f.AfterFunc(time.Second, func() {})
		f.AfterFunc(time.Second, func() {})
		close(registered)
	}()
	if !f.BlockUntil(2, 10*time.Second) {
		t.Fatal("BlockUntil(2) timed out")
	}
	<-registered
	if f.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", f.Pending())
	}
}

func TestReal(t *testing.T) {
	c := Real()
	before := time.Now()
	if c.Now().Before(before) {
		t.Fatal("Real().Now went backwards")
	}
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Real().AfterFunc did not fire within 10s")
	}
	tm := c.AfterFunc(time.Hour, func() { t.Error("stopped real timer fired") })
	if !tm.Stop() {
		t.Fatal("Stop of a pending real timer returned false")
	}
}

// TestAtKeepsItsDeadlineWhileAnotherGoroutineAdvances: a deadline read
// before an Advance by another goroutine still fires at that deadline.
// With AfterFunc(at.Sub(now)), now read before the advance, it fired the
// advance's length late.
func TestAtKeepsItsDeadlineWhileAnotherGoroutineAdvances(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	at := epoch.Add(10 * time.Second)
	now := f.Now()             // the caller computes its deadline from this reading
	f.Advance(7 * time.Second) // meanwhile another goroutine advances
	At(f, at, r.fn(f, "at"))
	f.AfterFunc(at.Sub(now), r.fn(f, "after")) // the racy way, for contrast
	f.Advance(3 * time.Second)
	if got, want := r.names(), []string{"at"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v at 10s, want %v", got, want)
	}
	f.Advance(7 * time.Second)
	if got, want := r.at, []time.Duration{10 * time.Second, 17 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
}

// TestAtInThePastIsDueNow: as AfterFunc with d <= 0, never from inside At.
func TestAtInThePastIsDueNow(t *testing.T) {
	f := NewFake(epoch)
	f.Advance(time.Minute)
	var r recorder
	At(f, epoch, r.fn(f, "past"))
	if got := r.names(); len(got) != 0 {
		t.Fatalf("fired inside At: %v", got)
	}
	f.Advance(0)
	if got, want := r.at, []time.Duration{time.Minute}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
}

func TestAtOnAClockWithoutAfterFuncAt(t *testing.T) {
	f := NewFake(epoch)
	var r recorder
	At(struct{ Clock }{f}, epoch.Add(5*time.Second), r.fn(f, "x"))
	f.Advance(5 * time.Second)
	if got, want := r.at, []time.Duration{5 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
}
