package testkit

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// interval is the pause between two polls, at least: a cheap condition
// is seen within milliseconds of holding, and a caller whose condition
// moves a fake clock on by a step gets a steady cadence. A condition that
// takes longer (a command, a query) is followed by a pause as long as
// itself, so that a wait keeps the machine at most half busy.
const interval = 2 * time.Millisecond

// Eventually polls cond until it holds. If it does not within the bound,
// it fails t (Fatalf) with "not within <within>: " and the message.
func Eventually(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("not within %v: %s", within, fmt.Sprintf(format, args...))
	}
}

// EventuallyNil calls f until it returns nil. If it does not within the
// bound, it fails t with the message and f's last error.
func EventuallyNil(t testing.TB, within time.Duration, f func() error, format string, args ...any) {
	t.Helper()
	var last error
	if !Until(within, func() bool { last = f(); return last == nil }) {
		t.Fatalf("not within %v: %s: %v", within, fmt.Sprintf(format, args...), last)
	}
}

// Wait runs block (a WaitGroup's Wait, a channel receive) and waits for it
// to return. If it does not within the bound, it fails t with the
// message; block is left running (it must end when the test does).
func Wait(t testing.TB, within time.Duration, block func(), format string, args ...any) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		block()
	}()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("not within %v: %s", within, fmt.Sprintf(format, args...))
	}
}

// Until polls cond until it holds or the bound passes, and says whether
// it held. For callers whose failure shows what they see at that moment
// (a state dump): they fail the test themselves.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		start := time.Now()
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(max(interval, time.Since(start)), time.Until(deadline)))
	}
}

// Buffer is a bytes.Buffer that one goroutine may write (a logger, a
// child's output) while the test reads it. Its zero value is empty.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
