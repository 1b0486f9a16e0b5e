package dispatch

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// DefaultThroughput is Proto.Actor's: messages a mailbox processes before
// it yields.
const DefaultThroughput = 300

// DefaultMaxIdle bounds the workers waiting for work: enough for the
// bursts of a 2-core machine, few enough that their stacks are a few MiB.
const DefaultMaxIdle = 1024

// Pool is an actor.Dispatcher that reuses goroutines.
//
// Proto.Actor's default dispatcher starts a goroutine each time an idle
// mailbox gets a message (go fn()). A goroutine starts with a small stack,
// and an actor's Receive (JSON, bbolt, the cores) grows it two or three
// times, copying it each time: in a CPU profile of a 30,000-volume fleet
// start, runtime.copystack alone was 9% of all CPU. A Pool hands a
// mailbox run to a worker that is idle and whose stack has already grown;
// only when none is idle does it start one, so it never queues a run
// behind another (an actor that blocks cannot starve the others, exactly
// as with the default dispatcher). At most maxIdle workers wait for work;
// the others end when their run is done. Its zero value is
// not usable: call New. Close it when the actor system has stopped.
type Pool struct {
	throughput int
	maxIdle    int32

	work   chan func() // unbuffered: a send succeeds only into an idle worker
	quit   chan struct{}
	once   sync.Once
	idle   atomic.Int32
	live   sync.WaitGroup
	starts atomic.Int64 // goroutines started (tests, metrics)
	alive  atomic.Int32 // workers not ended
}

var _ actor.Dispatcher = (*Pool)(nil)

// New returns a pool whose mailboxes yield after throughput messages
// (<= 0: DefaultThroughput) and which keeps at most maxIdle idle workers
// (<= 0: DefaultMaxIdle).
func New(throughput, maxIdle int) *Pool {
	if throughput <= 0 {
		throughput = DefaultThroughput
	}
	if maxIdle <= 0 {
		maxIdle = DefaultMaxIdle
	}
	return &Pool{throughput: throughput, maxIdle: int32(maxIdle), work: make(chan func()), quit: make(chan struct{})}
}

// Throughput implements actor.Dispatcher.
func (p *Pool) Throughput() int { return p.throughput }

// Schedule implements actor.Dispatcher: fn runs on an idle worker, or on a
// new one if none is idle. It never blocks and never waits for another fn.
func (p *Pool) Schedule(fn func()) {
	select {
	case p.work <- fn:
		return
	default:
	}
	p.live.Add(1)
	p.alive.Add(1)
	p.starts.Add(1)
	go p.worker(fn)
}

// worker runs fn, then waits for more while the pool is open and fewer than
// maxIdle others wait.
func (p *Pool) worker(fn func()) {
	defer p.live.Done()
	defer p.alive.Add(-1)
	for {
		fn()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case fn = <-p.work:
			p.idle.Add(-1)
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

// Close makes the idle workers end, and every busy one once its run is
// done; runs scheduled afterwards still run (each on its own goroutine).
// Wait waits for them.
func (p *Pool) Close() { p.once.Do(func() { close(p.quit) }) }

// Wait waits until every worker has ended (after Close).
func (p *Pool) Wait() { p.live.Wait() }

// Started is the number of goroutines the pool has started.
func (p *Pool) Started() int64 { return p.starts.Load() }

// Workers is the number of workers that have not ended, busy or idle.
func (p *Pool) Workers() int { return int(p.alive.Load()) }

// Idle is the number of workers waiting for work.
func (p *Pool) Idle() int { return int(p.idle.Load()) }
