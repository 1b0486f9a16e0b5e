package controller

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A lifetime's calls end with it; a call that returned is forgotten, so an
// idle actor keeps nothing; a call asked after the end starts cancelled.
func TestLifetime(t *testing.T) {
	root, stop := context.WithCancel(context.Background())
	defer stop()
	l := newLifetime(root)
	if err := l.Err(); err != nil {
		t.Fatalf("new lifetime: Err = %v", err)
	}
	done, releaseDone := l.call(time.Minute)
	releaseDone()
	if !errors.Is(done.Err(), context.Canceled) {
		t.Errorf("released call: Err = %v, want Canceled", done.Err())
	}
	if l.calls != nil {
		t.Errorf("no call in flight, yet %d kept", len(l.calls))
	}
	a, releaseA := l.call(time.Minute)
	defer releaseA()
	b, releaseB := l.call(time.Minute)
	defer releaseB()
	if a.Err() != nil || b.Err() != nil || len(l.calls) != 2 {
		t.Fatalf("two calls in flight: errs %v %v, kept %d", a.Err(), b.Err(), len(l.calls))
	}
	l.end()
	for i, c := range []context.Context{a, b} {
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("call %d in flight at the end: Err = %v, want Canceled", i, c.Err())
		}
	}
	if !errors.Is(l.Err(), context.Canceled) || l.calls != nil {
		t.Errorf("ended: Err = %v, kept %d calls", l.Err(), len(l.calls))
	}
	late, releaseLate := l.call(time.Minute)
	defer releaseLate()
	if !errors.Is(late.Err(), context.Canceled) || l.calls != nil {
		t.Errorf("call after the end: Err = %v, kept %d calls", late.Err(), len(l.calls))
	}
	l.end() // idempotent
}

// The controller's stop ends every lifetime, and a call's own bound holds.
func TestLifetimeRootAndTimeout(t *testing.T) {
	root, stop := context.WithCancel(context.Background())
	l := newLifetime(root)
	c, release := l.call(time.Minute)
	defer release()
	short, releaseShort := l.call(time.Nanosecond)
	defer releaseShort()
	<-short.Done()
	if !errors.Is(short.Err(), context.DeadlineExceeded) {
		t.Errorf("bounded call: Err = %v, want DeadlineExceeded", short.Err())
	}
	stop()
	<-c.Done()
	if !errors.Is(l.Err(), context.Canceled) {
		t.Errorf("controller stopped: Err = %v, want Canceled", l.Err())
	}
}
