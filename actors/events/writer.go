package events

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

var errNoLog = errors.New("events: no durable log to watch (the recorder keeps events in memory only)")

// Defaults of WriterConfig.
const (
	DefaultQueue      = 4096
	DefaultBatch      = 256
	DefaultTimeout    = 5 * time.Second
	DefaultSweepEvery = time.Minute
)

// WriterConfig bounds a Writer.
type WriterConfig struct {
	// Queue is how many events may wait for the log; beyond, events are
	// dropped (and counted). 0: DefaultQueue.
	Queue int
	// Batch is the most events one transaction writes. 0: DefaultBatch.
	Batch int
	// Timeout bounds one transaction (and a sweep). 0: DefaultTimeout.
	Timeout time.Duration
	// SweepEvery is how often a Sweeper log is swept. 0: DefaultSweepEvery.
	SweepEvery time.Duration
	// OnError, if set, is told of a failed transaction and how many
	// events it lost (on the writer's goroutine).
	OnError func(err error, lost int)
}

func (c WriterConfig) withDefaults() WriterConfig {
	if c.Queue <= 0 {
		c.Queue = DefaultQueue
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
	return c
}

// WriterStats counts what became of the events offered to a Writer.
type WriterStats struct {
	Written uint64 // in the log
	Dropped uint64 // never tried: the queue was full, or the writer closed
	Failed  uint64 // their transaction failed (log slow or down)
	Flushes uint64 // transactions that committed
}

// Writer writes events to a Log from one goroutine of its own, so that
// recording never waits for the log: Offer queues (bounded) and returns;
// the goroutine takes what has queued up, at most Batch events, and
// writes them in one transaction, while the next ones queue. When the
// log is slow or down the queue fills and events are dropped, counted in
// Stats: events never decide anything (DESIGN.md), an actor must never
// wait for one. Close writes what is queued and stops.
type Writer struct {
	log  Log
	cfg  WriterConfig
	ch   chan Event
	mu   sync.RWMutex // Offer holds it shared; Close exclusive to close
	shut bool

	stop    chan struct{}
	flushes chan chan struct{}
	done    chan struct{}

	written, dropped, failed, commits atomic.Uint64
}

// NewWriter starts a writer to log.
func NewWriter(log Log, cfg WriterConfig) *Writer {
	cfg = cfg.withDefaults()
	w := &Writer{log: log, cfg: cfg, ch: make(chan Event, cfg.Queue),
		stop: make(chan struct{}), flushes: make(chan chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Log is the log w writes to.
func (w *Writer) Log() Log { return w.log }

// Offer queues e for the log, or drops it (counted) if the queue is full
// or the writer closing. It never blocks.
func (w *Writer) Offer(e Event) bool {
	if !w.mu.TryRLock() { // Close is closing
		w.dropped.Add(1)
		return false
	}
	defer w.mu.RUnlock()
	if w.shut {
		w.dropped.Add(1)
		return false
	}
	select {
	case w.ch <- e:
		return true
	default:
		w.dropped.Add(1)
		return false
	}
}

// Flush returns once every event offered before it was written (or
// failed), or when ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case w.flushes <- reply:
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued, in transactions of at most Batch events
// each bounded by Timeout, and stops. Later Offers drop. A second Close
// waits for the first.
func (w *Writer) Close() {
	w.mu.Lock()
	first := !w.shut
	w.shut = true
	w.mu.Unlock()
	if first {
		close(w.stop)
	}
	<-w.done
}

// Stats returns the counts so far.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Written: w.written.Load(), Dropped: w.dropped.Load(), Failed: w.failed.Load(), Flushes: w.commits.Load()}
}

func (w *Writer) run() {
	defer close(w.done)
	var sweep <-chan time.Time
	if _, ok := w.log.(Sweeper); ok {
		t := time.NewTicker(w.cfg.SweepEvery)
		defer t.Stop()
		sweep = t.C
	}
	batch := make([]Event, 0, w.cfg.Batch)
	for {
		select {
		case e := <-w.ch:
			w.write(w.take(append(batch[:0], e)))
		case reply := <-w.flushes:
			w.drain(batch)
			close(reply)
		case <-sweep:
			w.sweep()
		case <-w.stop:
			w.drain(batch)
			return
		}
	}
}

// drain writes everything queued.
func (w *Writer) drain(batch []Event) {
	for {
		b := w.take(batch[:0])
		if len(b) == 0 {
			return
		}
		w.write(b)
	}
}

// take appends queued events to batch, up to Batch, without waiting.
func (w *Writer) take(batch []Event) []Event {
	for len(batch) < w.cfg.Batch {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

func (w *Writer) write(batch []Event) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	if err := w.log.AppendEvents(ctx, batch); err != nil {
		w.failed.Add(uint64(len(batch)))
		if w.cfg.OnError != nil {
			w.cfg.OnError(err, len(batch))
		}
		return
	}
	w.written.Add(uint64(len(batch)))
	w.commits.Add(1)
}

func (w *Writer) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	if _, err := w.log.(Sweeper).SweepEvents(ctx); err != nil && w.cfg.OnError != nil {
		w.cfg.OnError(err, 0)
	}
}

// closing reports whether Close has begun.
func (w *Writer) closing() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.shut
}
