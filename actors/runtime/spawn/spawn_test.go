package spawn

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/runtime/slogrus"
)

// Sends to a name race with spawns of that name; under the guard every
// message reaches a complete mailbox (run with -race: the unguarded version
// trips the detector, and can panic on a nil dispatcher).
func TestSendsRacingSpawns(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	g := New(sys)
	var got atomic.Int64
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			got.Add(1)
		}
	})
	const n = 200
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("a%d", i)
		pid := actor.NewPID(sys.Address(), name)
		wg.Add(2)
		go func() { defer wg.Done(); g.Send(pid, "hello") }()
		go func() {
			defer wg.Done()
			if _, err := g.Spawn(props, name); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if !g.Exists(fmt.Sprintf("a%d", i)) {
			t.Fatalf("a%d not spawned", i)
		}
		if err := sys.Root.StopFuture(actor.NewPID(sys.Address(), fmt.Sprintf("a%d", i))).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if got.Load() > n {
		t.Fatalf("%d messages delivered for %d sent", got.Load(), n)
	}
}

// Stops and poisons race with spawns of the same names (chaos kills while
// the lookup brings an actor back; a controller stopping while it spawns):
// under the guard none reaches a half-built mailbox (found by chaos: a
// controller restart's StopFuture panicked on a nil dispatcher).
func TestStopsRacingSpawns(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	g := New(sys)
	props := actor.PropsFromFunc(func(actor.Context) {})
	const n = 150
	var wg sync.WaitGroup
	var futures sync.Map
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("s%d", i)
		pid := actor.NewPID(sys.Address(), name)
		wg.Add(2)
		go func() {
			defer wg.Done()
			switch i % 3 {
			case 0:
				g.Stop(pid)
			case 1:
				g.Poison(pid)
			default:
				futures.Store(name, g.StopFuture(pid))
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := g.Spawn(props, name); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// A stop that came first went to no one; stop what is left, bounded.
	for i := 0; i < n; i++ {
		if err := g.StopFuture(actor.NewPID(sys.Address(), fmt.Sprintf("s%d", i))).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	futures.Range(func(_, f any) bool {
		_, _ = f.(*actor.Future).Result() // answered or timed out: never hangs
		return true
	})
}

// A send locks the shard of its PID's Id; a spawn the shard of the name it
// gives. They must be one lock: a root spawn's PID is named as asked.
func TestSpawnedPIDSharesItsNamesLock(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	g := New(sys)
	props := actor.PropsFromFunc(func(actor.Context) {})
	for i := range 100 {
		name := fmt.Sprintf("volume/v%03d", i)
		pid, err := g.Spawn(props, name)
		if err != nil {
			t.Fatal(err)
		}
		if g.lock(pid.Id) != g.lock(name) {
			t.Fatalf("spawned %q as PID %q: another lock", name, pid.Id)
		}
		if err := g.StopFuture(pid).Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
