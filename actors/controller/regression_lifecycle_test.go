package controller

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// Regression (found in review): a dangling attachment of a volume the store does not know (made
// behind tether's back, or left by a deleted volume whose detach was lost)
// is never detached. The finding spawns a volume actor; its start-up verify
// has no candidates, so Restored makes it Idle and deleted: it retires and
// Stops itself, then replays the queued finding, sends PrepareDetach, and the
// Stop drops everything after. Every sync pass repeats this.
func TestRegressionDanglingUnknownVolumeNeverDetached(t *testing.T) {
	r := newRig(t)
	passes := r.passes()
	r.node("n1")
	r.cloud.CreateVolume("x", cloud.Exclusive) // exists in the cloud only
	inst, _ := r.cloud.InstanceOf("n1")
	if _, err := r.cloud.Attach(t.Context(), "x", inst); err != nil {
		t.Fatal(err)
	}
	r.ctl.SyncNow()
	r.eventually("pass done", func() bool { return len(passes()) == 1 })
	r.eventually("dangling attachment of unknown volume x detached", func() bool { return len(r.attachedTo("x")) == 0 })
	if got := len(r.events("x", "DanglingAttachment")); got != 1 {
		t.Fatalf("DanglingAttachment events = %d, want 1", got)
	}
}

// Regression (found in review): a volume actor that stops itself (deleted and idle) drops the
// user messages queued behind its Stop, and because it was retired it is
// not respawned. A volume deleted and created again (with a workload) in
// that window is never attached: no actor, and the sync sees no difference.
// The middleware only makes the window deterministic: it re-creates the
// volume right after the actor handled the Deleted message.
func TestRegressionRecreatedVolumeLostBehindSelfStop(t *testing.T) {
	var once sync.Once
	var hook func()
	mw := func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			next(c, env)
			if m, ok := env.Message.(*messages.SetDesiredNodes); ok && m.VolumeId == "v1" && m.Deleted {
				once.Do(func() { hook() })
			}
		}
	}
	r := newRig(t, func(c *Config, _ *sim.Config) { c.Middleware = append(c.Middleware, mw) })
	r.node("n1")
	r.volume("v1", cloud.Exclusive)
	r.eventually("v1 restored", func() bool {
		st, err := r.ctl.VolumeStatus("v1", time.Second)
		return err == nil && st.Restored
	})
	hook = func() {
		if err := r.ctl.ApplyVolume(store.VolumeSpec{ID: "v1", Mode: cloud.Exclusive}); err != nil {
			t.Error(err)
		}
		if err := r.ctl.ApplyWorkload(store.Workload{UID: "w1", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}); err != nil {
			t.Error(err)
		}
	}
	must(t, r.ctl.DeleteVolume("v1"))
	r.eventually("v1 re-created and attached to n1", r.settled("v1", "n1"))
}

// Regression (found in review): timer.wakeAt ignores a later deadline while a timer is set, even
// if that timer has already fired (its Wake is in the mailbox); fired() then
// forgets the timer, so the later deadline is never scheduled.
func TestRegressionTimerLosesWakeRequestedAfterFire(t *testing.T) {
	clk := clock.NewFake(start)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	e := &env{sys: sys, clock: clk, guard: spawn.New(sys)}
	pid := actor.NewPID(sys.Address(), "nobody")
	var tm timer
	tm.wakeAt(e, pid, start.Add(time.Second))
	clk.Advance(time.Second)                     // fires: a Wake is on its way to the mailbox
	tm.wakeAt(e, pid, start.Add(31*time.Second)) // e.g. a PrepareDetach's timeout, asked before that Wake is handled
	tm.fired(clk.Now())                          // the Wake is handled
	if clk.Pending() == 0 {
		t.Fatal("the wake asked for at +31s was dropped: no timer pending")
	}
}
