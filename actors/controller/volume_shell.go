package controller

import (
	"context"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
)

// volumeShell is the VolumeHost of one incarnation of a volume actor:
// Proto.Actor sends, the controller's clock, timer, call queue, verifier,
// store and instance cache.
type volumeShell struct{ a *volumeActor }

var _ VolumeHost = volumeShell{}

func (s volumeShell) Now() time.Time { return s.a.env.clock.Now() }

func (s volumeShell) SendNode(n cloud.NodeName, msg any) {
	e := s.a.env
	e.guard.Send(e.lookup.Node(n), msg)
}

// SendSelf delivers a goroutine's result to this incarnation. Once it has
// stopped or restarted (its lifetime ended) the result is dropped: the
// next incarnation rebuilds from the store and the cloud (and fences a
// node where a detach may still land), and a send by name could reach a
// new actor of the same name while Proto.Actor is still initialising it.
func (s volumeShell) SendSelf(msg any) {
	if s.a.life.Err() != nil {
		return
	}
	s.a.env.guard.Send(s.a.self, msg)
}

func (s volumeShell) WakeAt(at time.Time) { s.a.timer.wakeAt(s.a.env, s.a.self, at) }
func (s volumeShell) StopTimer()          { s.a.timer.stop() }

func (s volumeShell) Record(f volume.Record) {
	a, e := s.a, s.a.env
	e.record(a.ref, f.Type, string(f.Node), f.Warning, f.Message)
	if f.Retry > 0 && e.cfg.Observer != nil {
		op := "attach"
		if f.Type == volume.EventFailedDetach {
			op = "detach"
		}
		e.cfg.Observer.BackoffWait(op, f.Retry)
	}
}

// Verify asks the verifier (verifier.go): its answer comes from the
// verifier's goroutine.
func (s volumeShell) Verify(nodes []cloud.NodeName, answer func(VerifyAnswer)) {
	s.a.env.verify.ask(s.a.life, s.a.id, nodes, answer)
}

// Call runs op on the call queue (callqueue.go), bounded by CloudTimeout
// and cancelled when this incarnation ends.
func (s volumeShell) Call(op CloudOp) {
	life, e := s.a.life, s.a.env
	e.calls.run(func() {
		if err := life.Err(); err != nil {
			op.Finish(err, err) // this incarnation died while the call waited its turn: send nothing
			return
		}
		c, release := life.call(e.cfg.CloudTimeout)
		defer release()
		if err := op.Prepare(c); err != nil {
			op.Finish(err, c.Err())
			return
		}
		err := op.Send(c)
		op.Finish(err, c.Err())
	})
}

func (s volumeShell) PutIntent(in store.Intent) error { return s.a.env.store.PutIntent(in) }

func (s volumeShell) Resolve(ctx context.Context, n cloud.NodeName) (cloud.InstanceID, error) {
	return s.a.env.inst.resolve(ctx, n)
}

func (s volumeShell) Forget(n cloud.NodeName, err error) { s.a.env.inst.forget(n, err) }

// Fenced: a newer incarnation of this volume claimed it (distributed mode:
// another activation, on this member or another). This one must not act
// any more: it stops, and whatever it was asked goes to the new owner.
// Called from the goroutine of a cloud call.
func (s volumeShell) Fenced(err error) {
	s.a.env.log.WithField("volume", s.a.id).Warnf("stopping a stale activation: %v", err)
	s.a.env.guard.Stop(s.a.self)
}
