package bench

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/messages"
)

// bareDelivery is the baseline: bare Proto.Actor (no supervision, no
// store, no cloud) delivering total messages round-robin to actors actors
// that only count them. It returns the time from the first send to the
// last delivery.
func bareDelivery(actors int, total int64) time.Duration {
	if actors < 1 || total < 1 {
		return 0
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	var got atomic.Int64
	done := make(chan struct{})
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.Wake); ok && got.Add(1) == total {
			close(done)
		}
	})
	pids := make([]*actor.PID, actors)
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
	}
	wake := &messages.Wake{}
	t0 := time.Now()
	for i := int64(0); i < total; i++ {
		sys.Root.Send(pids[i%int64(actors)], wake)
	}
	<-done
	d := time.Since(t0)
	for _, p := range pids {
		sys.Root.Stop(p)
	}
	return d
}
