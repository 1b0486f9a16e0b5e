package controller

import "sync"

// callQueue runs the volume actors' attach and detach calls on at most
// max goroutines, in the order they were asked (no volume overtakes
// another), each worker ending when the queue is empty.
//
// A goroutine per call, as before, had a fleet start of V volumes run V
// goroutines at once, nearly all waiting (for the store's group commit,
// the rate limiter or the cloud): the runtime never frees a goroutine's
// descriptor, so the peak stayed in the heap at rest (about 400 B per
// volume), and their stacks in the resident set. The bound is set above
// the cloud limiter's calls in flight and the store's useful batch, so
// neither waits on the queue.
type callQueue struct {
	mu      sync.Mutex
	max     int
	workers int
	queue   []func() // waiting; nil when empty
	peak    int      // most workers at once (tests)
}

// defaultCallWorkers bounds Config.CallWorkers' zero value.
const defaultCallWorkers = 1024

func newCallQueue(max int) *callQueue {
	if max <= 0 {
		max = defaultCallWorkers
	}
	return &callQueue{max: max}
}

// run queues f; it never blocks.
func (q *callQueue) run(f func()) {
	q.mu.Lock()
	if q.workers < q.max {
		q.workers++
		q.peak = max(q.peak, q.workers)
		q.mu.Unlock()
		go q.work(f)
		return
	}
	q.queue = append(q.queue, f)
	q.mu.Unlock()
}

func (q *callQueue) work(f func()) {
	for f != nil {
		f()
		f = q.take()
	}
}

// take hands the next waiting call to a worker, or retires the worker.
func (q *callQueue) take() func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		q.queue = nil
		q.workers--
		return nil
	}
	f := q.queue[0]
	q.queue[0] = nil
	q.queue = q.queue[1:]
	return f
}

// busy reports the workers running and the calls waiting (tests).
func (q *callQueue) busy() (workers, waiting, peak int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.workers, len(q.queue), q.peak
}
