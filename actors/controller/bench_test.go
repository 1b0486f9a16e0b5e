package controller

import (
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/heapstat"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// BenchmarkVolumeLifecycle attaches V volumes over N nodes through the
// actors (zero-latency sim cloud), then detaches them, and in the same run
// delivers as many messages with bare Proto.Actor. It reports:
//   - ns/volume: one attach+detach lifecycle, wall time / V
//   - msgs/volume: messages our actors received per lifecycle
//   - idle-B/actor: heap per idle volume actor
//   - bare-ns/volume: bare Proto.Actor delivering msgs/volume messages to V actors, / V
//   - x-bare: ns/volume divided by bare-ns/volume
//   - bare-idle-B/actor: heap per idle bare Proto.Actor actor
//
// Run: go test -run '^$' -bench VolumeLifecycle -benchtime 1x ./actors/controller
func BenchmarkVolumeLifecycle(b *testing.B) {
	for _, size := range []struct{ v, n int }{{1000, 100}, {10000, 1000}} {
		b.Run(fmt.Sprintf("V=%d/N=%d", size.v, size.n), func(b *testing.B) {
			var ns, msgs, idle, bare, bareIdle float64
			for i := 0; i < b.N; i++ {
				r := lifecycle(b, size.v, size.n)
				ns += r.ns
				msgs += r.msgs
				idle += r.idle
				d, h := bareDelivery(b, size.v, int(r.msgs*float64(size.v)))
				bare += d
				bareIdle += h
			}
			n := float64(b.N)
			b.ReportMetric(ns/n, "ns/volume")
			b.ReportMetric(msgs/n, "msgs/volume")
			b.ReportMetric(idle/n, "idle-B/actor")
			b.ReportMetric(bare/n, "bare-ns/volume")
			b.ReportMetric(ns/bare, "x-bare")
			b.ReportMetric(bareIdle/n, "bare-idle-B/actor")
		})
	}
}

type lifecycleResult struct{ ns, msgs, idle float64 }

func lifecycle(b *testing.B, v, n int) lifecycleResult {
	b.Helper()
	b.StopTimer()
	var received atomic.Int64
	cfg := DefaultConfig()
	cfg.SyncPeriod = time.Hour
	cfg.Clock = clock.Real()
	log := logrus.New()
	log.SetOutput(io.Discard)
	log.SetLevel(logrus.WarnLevel) // measure the actors, not log formatting
	cfg.Log, cfg.Supervisor.Log = log, log
	cfg.Middleware = []actor.ReceiverMiddleware{func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if _, system := env.Message.(actor.SystemMessage); !system {
				received.Add(1)
			}
			next(c, env)
		}
	}}
	cl := sim.New(sim.Config{})
	st := store.NewMemory()
	rec := events.NewRecorder(4)
	attached, detached := make(chan struct{}), make(chan struct{})
	var nAtt, nDet atomic.Int64
	rec.Subscribe(func(e events.Event) {
		switch e.Type {
		case "SuccessfulAttachVolume":
			if nAtt.Add(1) == int64(v) {
				close(attached)
			}
		case "SuccessfulDetachVolume":
			if nDet.Add(1) == int64(v) {
				close(detached)
			}
		}
	})
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	ctl := New(sys, cfg, cl, st, rec)
	must(b, ctl.Start())
	defer func() {
		must(b, ctl.Stop(time.Minute))
		sys.Shutdown()
	}()
	for i := 0; i < n; i++ {
		name := cloud.NodeName(fmt.Sprintf("n%04d", i))
		cl.AddInstance(name)
		must(b, ctl.ApplyNode(store.NodeSpec{Name: name}))
	}
	heap0 := heapstat.Live()
	for i := 0; i < v; i++ {
		id := cloud.VolumeID(fmt.Sprintf("v%05d", i))
		cl.CreateVolume(id, cloud.Exclusive)
		must(b, ctl.ApplyVolume(store.VolumeSpec{ID: id, Mode: cloud.Exclusive}))
	}
	// Every actor has answered once it answers a status request.
	for i := 0; i < v; i++ {
		_, err := ctl.VolumeStatus(cloud.VolumeID(fmt.Sprintf("v%05d", i)), time.Minute)
		must(b, err)
	}
	idle := float64(heapstat.Live()-heap0) / float64(v)
	received.Store(0)
	b.StartTimer()
	t0 := time.Now()
	for i := 0; i < v; i++ {
		id := cloud.VolumeID(fmt.Sprintf("v%05d", i))
		must(b, ctl.ApplyWorkload(store.Workload{UID: "w" + string(id), Node: cloud.NodeName(fmt.Sprintf("n%04d", i%n)), Volumes: []cloud.VolumeID{id}}))
	}
	wait(b, attached, "attach")
	for i := 0; i < v; i++ {
		must(b, ctl.DeleteWorkload(fmt.Sprintf("wv%05d", i)))
	}
	wait(b, detached, "detach")
	elapsed := time.Since(t0)
	b.StopTimer()
	if got := cl.Calls().AttachNew; got != v {
		b.Fatalf("AttachNew = %d, want %d", got, v)
	}
	return lifecycleResult{ns: float64(elapsed.Nanoseconds()) / float64(v), msgs: float64(received.Load()) / float64(v), idle: idle}
}

func wait(b *testing.B, ch chan struct{}, what string) {
	select {
	case <-ch:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%s did not finish", what)
	}
}

// bareDelivery sends total messages round-robin to v bare actors that only
// count, and returns ns per actor for delivering them all and the heap
// bytes per idle bare actor.
func bareDelivery(b *testing.B, v, total int) (float64, float64) {
	b.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	var got atomic.Int64
	done := make(chan struct{})
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.Wake); ok && got.Add(1) == int64(total) {
			close(done)
		}
	})
	pids := make([]*actor.PID, v)
	heap0 := heapstat.Live()
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
	}
	idle := float64(heapstat.Live()-heap0) / float64(v)
	t0 := time.Now()
	for i := 0; i < total; i++ {
		sys.Root.Send(pids[i%v], &messages.Wake{})
	}
	wait(b, done, "bare delivery")
	elapsed := time.Since(t0)
	for _, p := range pids {
		sys.Root.Stop(p)
	}
	return float64(elapsed.Nanoseconds()) / float64(v), idle
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
