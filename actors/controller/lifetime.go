package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lifetime is one incarnation of an actor: it ends when the incarnation
// stops or restarts, or when the controller stops, and every cloud call
// the incarnation has in flight is cancelled then.
//
// It stands in for a context.WithCancel per actor, which a fleet pays for
// at rest: that context registers in the controller's, and its first
// child (the first cloud call) leaves it a done channel and a children map
// that stay allocated for the actor's life, about half a kilobyte per
// volume. A lifetime holds only the calls in flight, and nothing once they
// have returned.
type lifetime struct {
	root  context.Context // the controller's
	ended atomic.Bool
	mu    sync.Mutex
	next  uint64
	calls []lifeCall // in flight; nil when none
}

type lifeCall struct {
	id     uint64
	cancel context.CancelFunc
}

// alive is what a question to the verifier needs of its asker: whether it
// still wants the answer.
type alive interface{ Err() error }

func newLifetime(root context.Context) *lifetime { return &lifetime{root: root} }

// Err is context.Canceled once the lifetime ended (or the controller's
// error once that stopped), nil before.
func (l *lifetime) Err() error {
	if err := l.root.Err(); err != nil {
		return err
	}
	if l.ended.Load() {
		return context.Canceled
	}
	return nil
}

// call gives the context of one cloud call: bounded by d, cancelled when
// the lifetime ends. release (call it when the call returns) forgets it.
func (l *lifetime) call(d time.Duration) (ctx context.Context, release func()) {
	c, cancel := context.WithTimeout(l.root, d)
	l.mu.Lock()
	if l.ended.Load() {
		l.mu.Unlock()
		cancel()
		return c, cancel
	}
	l.next++
	id := l.next
	l.calls = append(l.calls, lifeCall{id: id, cancel: cancel})
	l.mu.Unlock()
	return c, func() {
		cancel()
		l.forget(id)
	}
}

func (l *lifetime) forget(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range l.calls {
		if c.id == id {
			l.calls = append(l.calls[:i], l.calls[i+1:]...)
			break
		}
	}
	if len(l.calls) == 0 {
		l.calls = nil // an idle actor keeps nothing
	}
}

// end ends the lifetime and cancels its calls in flight. Idempotent.
func (l *lifetime) end() {
	l.mu.Lock()
	l.ended.Store(true)
	calls := l.calls
	l.calls = nil
	l.mu.Unlock()
	for _, c := range calls {
		c.cancel()
	}
}
