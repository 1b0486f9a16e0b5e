package clock

import (
	"container/heap"
	"sync"
	"time"
)

// Fake is a manual Clock for tests. Time moves only when Advance is called;
// due callbacks run synchronously on the goroutine calling Advance, in
// deadline order (creation order for equal deadlines), without the Fake's
// lock held, so they may call Now, AfterFunc and Stop. They must not call
// Advance: advances are serialized and that would deadlock. A Fake is safe
// for concurrent use.
type Fake struct {
	advancing sync.Mutex // serializes Advance calls; taken before mu, never inside it

	mu      sync.Mutex
	now     time.Time
	seq     uint64
	timers  timerHeap
	changed chan struct{} // closed and replaced whenever timers change
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn to run once the clock has been advanced by d. A
// timer with d <= 0 is due at Now and fires on the next Advance, including
// Advance(0): never from inside AfterFunc, because callers may hold locks
// that fn takes.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d < 0 {
		d = 0
	}
	return f.scheduleLocked(f.now.Add(d), fn)
}

var _ Absolute = (*Fake)(nil)

// AfterFuncAt schedules fn to run once the clock reads at; an at not after
// Now is due at Now, as AfterFunc with d <= 0 is.
func (f *Fake) AfterFuncAt(at time.Time, fn func()) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if at.Before(f.now) {
		at = f.now
	}
	return f.scheduleLocked(at, fn)
}

func (f *Fake) scheduleLocked(deadline time.Time, fn func()) Timer {
	f.seq++
	t := &fakeTimer{clock: f, deadline: deadline, seq: f.seq, fn: fn}
	heap.Push(&f.timers, t)
	f.notifyLocked()
	return t
}

// Advance moves the clock forward by d (d < 0 counts as 0), firing every
// timer due by the new time in deadline order. While a timer fires, Now
// reads its deadline. Timers created by fired callbacks that fall due
// within the same advance fire too.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	f.advancing.Lock()
	defer f.advancing.Unlock()

	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	for {
		f.mu.Lock()
		if len(f.timers) == 0 || f.timers[0].deadline.After(target) {
			f.now = target
			f.mu.Unlock()
			return
		}
		t := heap.Pop(&f.timers).(*fakeTimer)
		if t.deadline.After(f.now) {
			f.now = t.deadline
		}
		f.notifyLocked()
		f.mu.Unlock()
		t.fn()
	}
}

// Pending returns how many timers have neither fired nor been stopped.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NextDeadline returns the deadline of the earliest pending timer, and
// false if there is none.
func (f *Fake) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	return f.timers[0].deadline, true
}

// BlockUntil waits, in real time, until at least n timers are pending, and
// reports false if that has not happened within timeout. Tests use it when
// another goroutine must register its timer before the test advances.
func (f *Fake) BlockUntil(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return true
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return f.Pending() >= n
		}
	}
}

// notifyLocked wakes every BlockUntil waiter. f.mu must be held.
func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	clock    *Fake
	deadline time.Time
	seq      uint64
	fn       func()
	index    int // position in the heap; -1 once fired or stopped
}

// Stop removes the timer if it is still pending.
func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&f.timers, t.index)
	f.notifyLocked()
	return true
}

// timerHeap orders timers by deadline, then by creation.
type timerHeap []*fakeTimer

func (h timerHeap) Len() int { return len(h) }

func (h timerHeap) Less(i, j int) bool {
	if !h[i].deadline.Equal(h[j].deadline) {
		return h[i].deadline.Before(h[j].deadline)
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *timerHeap) Push(x any) {
	t := x.(*fakeTimer)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
