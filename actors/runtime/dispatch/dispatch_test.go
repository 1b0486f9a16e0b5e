package dispatch

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/cloud/testkit"
)

// parked counts the pool workers blocked in their wait for work, from a
// dump of every goroutine.
func parked() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "[select") && strings.Contains(g, "dispatch.(*Pool).worker") {
			n++
		}
	}
	return n
}

func closed(t *testing.T, p *Pool) {
	t.Cleanup(func() {
		p.Close()
		p.Wait()
		goleak.VerifyNone(t, goleak.IgnoreCurrent())
	})
}

func TestIdleWorkerIsReused(t *testing.T) {
	p := New(0, 4)
	closed(t, p)
	done := make(chan int, 1)
	for i := range 50 {
		p.Schedule(func() { done <- i })
		if got := <-done; got != i {
			t.Fatalf("run %d reported %d", i, got)
		}
		// Counted idle is not yet waiting: wait until it is parked in
		// its select, where a Schedule hands it the next run.
		testkit.Eventually(t, 10*time.Second, func() bool { return p.Idle() == 1 && parked() == 1 }, "the worker waits for work")
	}
	if got := p.Started(); got != 1 {
		t.Fatalf("50 runs, each after the last ended: %d goroutines started, want 1", got)
	}
}

func TestBlockedRunsNeverQueueOthers(t *testing.T) {
	p := New(0, 2)
	closed(t, p)
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(10)
	for range 10 {
		p.Schedule(func() { started.Done(); <-release })
	}
	started.Wait() // all 10 run at once: none waits for a worker
	ran := make(chan struct{})
	p.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a run waited behind 10 blocked ones")
	}
	if got := p.Started(); got < 11 {
		t.Fatalf("%d goroutines started for 11 concurrent runs", got)
	}
	close(release)
	// The other 9 end rather than wait: at most maxIdle wait for work.
	testkit.Eventually(t, 10*time.Second, func() bool { return p.Workers() == 2 && p.Idle() == 2 }, "two workers left, both idle")
}

func TestCloseEndsWorkersAndLaterRunsStillRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := New(0, 8)
	var wg sync.WaitGroup
	wg.Add(4)
	for range 4 {
		p.Schedule(wg.Done)
	}
	wg.Wait()
	p.Close()
	ran := make(chan struct{})
	p.Schedule(func() { close(ran) })
	<-ran
	p.Wait()
}

type recorder struct {
	got  []int
	done chan []int
	n    int
}

func (r *recorder) Receive(c actor.Context) {
	if m, ok := c.Message().(int); ok {
		r.got = append(r.got, m)
		if len(r.got) == r.n {
			r.done <- r.got
		}
	}
}

// Mailboxes on a Pool keep Proto.Actor's promises: one message at a time,
// in the order sent, for many actors at once.
func TestActorsOnPoolKeepOrder(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	p := New(5, 0) // a small throughput: mailboxes yield and are scheduled again often
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	const actors, msgs = 20, 500
	done := make(chan []int, actors)
	pids := make([]*actor.PID, actors)
	for i := range pids {
		props := actor.PropsFromProducer(func() actor.Actor { return &recorder{done: done, n: msgs} }, actor.WithDispatcher(p))
		pids[i] = sys.Root.Spawn(props)
	}
	for m := range msgs {
		for _, pid := range pids {
			sys.Root.Send(pid, m)
		}
	}
	for range actors {
		select {
		case got := <-done:
			for i, m := range got {
				if m != i {
					t.Fatalf("message %d arrived as %d: out of order", i, m)
				}
			}
		case <-time.After(20 * time.Second):
			t.Fatal("not every actor got its messages")
		}
	}
	for _, pid := range pids {
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	sys.Shutdown()
	p.Close()
	p.Wait()
}

// deep uses about n KiB of stack, as a Receive through JSON, bbolt and a
// core does.
//
//go:noinline
func deep(n int) int {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[n%len(pad)])
}

type deepActor struct{ done *sync.WaitGroup }

func (a deepActor) Receive(c actor.Context) {
	if _, ok := c.Message().(int); ok {
		deep(16)
		a.done.Done()
	}
}

// BenchmarkDispatch compares the default dispatcher with a Pool: many
// actors, each told one message at a time, each Receive growing the stack.
func BenchmarkDispatch(b *testing.B) {
	for _, name := range []string{"default", "pool"} {
		b.Run(name, func(b *testing.B) {
			var p *Pool
			opts := []actor.PropsOption{}
			if name == "pool" {
				p = New(0, 0)
				opts = append(opts, actor.WithDispatcher(p))
			}
			sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
			var wg sync.WaitGroup
			pids := make([]*actor.PID, 1000)
			for i := range pids {
				pids[i] = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return deepActor{done: &wg} }, opts...))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				wg.Add(len(pids))
				for _, pid := range pids {
					sys.Root.Send(pid, i)
				}
				wg.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*len(pids))/b.Elapsed().Seconds(), "msgs/s")
			sys.Shutdown()
			if p != nil {
				p.Close()
				p.Wait()
				b.ReportMetric(float64(p.Started())/float64(b.N*len(pids)), "goroutines/msg")
			}
		})
	}
}

func ExampleNew() {
	p := New(0, 0)
	defer p.Close()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	done := make(chan string)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if s, ok := c.Message().(string); ok {
			done <- s
		}
	}, actor.WithDispatcher(p)))
	sys.Root.Send(pid, "hello")
	fmt.Println(<-done)
	// Output: hello
}
