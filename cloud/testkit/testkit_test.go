package testkit

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// A condition that comes to hold passes, polled until it does; one that
// never holds fails once, after the bound, with the caller's message.
func TestEventually(t *testing.T) {
	var calls atomic.Int32
	r := &recorder{TB: t}
	Eventually(r, 10*time.Second, func() bool { return calls.Add(1) == 5 }, "five calls")
	if f := r.failures(); len(f) != 0 || calls.Load() != 5 {
		t.Fatalf("a condition that held on the fifth call: failures %q, %d calls", f, calls.Load())
	}
	start := time.Now()
	Eventually(r, 30*time.Millisecond, func() bool { return false }, "volume %s attached", "v1")
	if took := time.Since(start); took < 30*time.Millisecond || took > 5*time.Second {
		t.Errorf("a condition that never held gave up after %v, want about 30ms", took)
	}
	if f := r.failures(); len(f) != 1 || f[0] != "not within 30ms: volume v1 attached" {
		t.Fatalf("failures %q, want one naming the bound and the message", f)
	}
}

// EventuallyNil passes once f returns nil; else it fails with f's last
// error.
func TestEventuallyNil(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	EventuallyNil(r, 10*time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}, "read")
	if len(r.failures()) != 0 {
		t.Fatalf("failures %q", r.failures())
	}
	n = 0
	EventuallyNil(r, 20*time.Millisecond, func() error { n++; return fmt.Errorf("attempt %d refused", n) }, "read %d", 7)
	f := r.failures()
	if len(f) != 1 || f[0] != fmt.Sprintf("not within 20ms: read 7: attempt %d refused", n) {
		t.Fatalf("failures %q, want the message and the last error (attempt %d)", f, n)
	}
}

// Wait returns once block does; a block that outlasts the bound fails.
func TestWait(t *testing.T) {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go wg.Done()
	Wait(r, 10*time.Second, wg.Wait, "done")
	if len(r.failures()) != 0 {
		t.Fatalf("failures %q", r.failures())
	}
	never := make(chan struct{})
	defer close(never)
	Wait(r, 20*time.Millisecond, func() { <-never }, "every actor %s", "stopped")
	if f := r.failures(); len(f) != 1 || !strings.HasSuffix(f[0], ": every actor stopped") {
		t.Fatalf("failures %q, want one for the block that never returned", f)
	}
}

// Until says whether the condition held, without failing anything.
func TestUntil(t *testing.T) {
	if !Until(time.Second, func() bool { return true }) {
		t.Error("a condition that holds at once: Until = false")
	}
	if Until(10*time.Millisecond, func() bool { return false }) {
		t.Error("a condition that never holds: Until = true")
	}
}
