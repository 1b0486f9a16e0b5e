package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// run carries out one effect. Cloud calls go to the call queue
// (callqueue.go); their result comes back to this actor as a message.
func (a *volumeActor) run(ctx actor.Context, eff volume.Effect) {
	e := a.env
	switch f := eff.(type) {
	case volume.CallAttach:
		e.calls.run(func() { a.callAttach(f) })
	case volume.CallDetach:
		e.calls.run(func() { a.callDetach(f) })
	case volume.PrepareDetach:
		e.guard.Send(e.lookup.Node(f.Node), &messages.PrepareDetach{Node: string(f.Node), VolumeId: string(a.id), Op: f.Op, Force: f.Force})
	case volume.ReportAttached:
		e.guard.Send(e.lookup.Node(f.Node), &messages.MarkVolumeAttached{Node: string(f.Node), VolumeId: string(a.id), DevicePath: f.DevicePath})
	case volume.ReportDetached:
		e.guard.Send(e.lookup.Node(f.Node), &messages.MarkVolumeDetached{Node: string(f.Node), VolumeId: string(a.id)})
	case volume.VerifyNode:
		a.verifyNodes([]cloud.NodeName{f.Node}, false)
	case volume.Record:
		e.record(a.ref, f.Type, string(f.Node), f.Warning, f.Message)
		if f.Retry > 0 && e.cfg.Observer != nil {
			op := "attach"
			if f.Type == volume.EventFailedDetach {
				op = "detach"
			}
			e.cfg.Observer.BackoffWait(op, f.Retry)
		}
	case volume.WakeAt:
		a.timer.wakeAt(e, a.self, f.At)
	default:
		panic(fmt.Sprintf("controller: unknown volume effect %T", eff))
	}
}

func (a *volumeActor) callAttach(f volume.CallAttach) {
	res := &messages.AttachFinished{VolumeId: string(a.id), Node: string(f.Node), Op: f.Op}
	err := a.callCloud(f.Node, f.Op, true, func(c context.Context, inst cloud.InstanceID) (err error) {
		res.DevicePath, err = a.env.cloud.Attach(c, a.id, inst)
		return err
	})
	if err != nil {
		res.ErrorKind, res.Error = int32(cloud.Classify(err)), err.Error()
	}
	a.sendSelf(res)
}

func (a *volumeActor) callDetach(f volume.CallDetach) {
	res := &messages.DetachFinished{VolumeId: string(a.id), Node: string(f.Node), Op: f.Op}
	err := a.callCloud(f.Node, f.Op, false, func(c context.Context, inst cloud.InstanceID) error {
		return a.env.cloud.Detach(c, a.id, inst)
	})
	if err != nil {
		res.ErrorKind, res.Error = int32(cloud.Classify(err)), err.Error()
	}
	a.sendSelf(res)
}

// callCloud sends one attach or detach of this volume on node n, bounded
// by CloudTimeout. It records the operation's intent, with that deadline,
// BEFORE sending it: a call once sent may land even if this incarnation
// dies, and the next one must know until when (volume.InFlight). Without
// the intent recorded nothing is sent, and the failure is retryable.
func (a *volumeActor) callCloud(n cloud.NodeName, op uint64, attach bool, call func(context.Context, cloud.InstanceID) error) error {
	e := a.env
	if err := a.life.Err(); err != nil {
		return err // this incarnation died while the call waited its turn: send nothing
	}
	c, release := a.life.call(e.cfg.CloudTimeout)
	defer release()
	intent := store.Intent{Volume: a.id, Node: n, Op: op, Attach: attach, Deadline: e.clock.Now().Add(e.cfg.CloudTimeout), Epoch: a.epoch}
	if err := e.store.PutIntent(intent); err != nil {
		if errors.Is(err, store.ErrFenced) {
			a.fenced(err)
		}
		return fmt.Errorf("%w: recording the operation before sending it: %w", cloud.ErrRetryable, err)
	}
	if err := c.Err(); err != nil {
		return err // this incarnation died while recording: send nothing
	}
	inst, err := e.inst.resolve(c, n)
	if err == nil {
		err = call(c, inst)
		e.inst.forget(n, err)
		a.landed(intent, err, c.Err())
	}
	return err
}

// landed shortens the intent of an operation whose reply arrived: it can
// no longer land after now, so a restore whose verify is asked later knows
// its outcome and need not fence the node until the original deadline (a
// restart right after a fleet start would otherwise hold every volume
// Uncertain for CloudTimeout). Nothing changes when the call ended with its
// context (it may still land until the deadline), or when the write fails
// (the original deadline stays: conservative). The volume actor starts no
// other operation on this node before this call's result, which comes
// after this write: the shortened intent never replaces a newer one.
func (a *volumeActor) landed(intent store.Intent, callErr, ctxErr error) {
	if ctxErr != nil || errors.Is(callErr, context.Canceled) || errors.Is(callErr, context.DeadlineExceeded) {
		return
	}
	e := a.env
	intent.Deadline = e.clock.Now()
	if err := e.store.PutIntent(intent); err != nil {
		e.log.WithField("volume", a.id).Debugf("keeping the intent's deadline: %v", err)
	}
}

// verifyNodes asks the verifier (verifier.go) whether this volume is
// attached to each node: it shares one cloud call per batch of instances
// with every other volume asking at the time. At start-up the answer is one
// VolumeRestored; later, one AttachmentVerified per node. Asking never
// blocks: the answer comes from the verifier's goroutine.
func (a *volumeActor) verifyNodes(nodes []cloud.NodeName, start bool) {
	e := a.env
	incarnation := a.incarnation
	e.verify.ask(a.life, a.id, nodes, func(ans verifyAnswer) {
		asOf := ans.AsOf.UnixNano()
		if start {
			res := &messages.VolumeRestored{VolumeId: string(a.id), Attached: ans.Attached, AsOfUnixNano: asOf, Incarnation: incarnation}
			if ans.Err != nil {
				res.VerifyFailed, res.Error = true, ans.Err.Error()
			}
			a.sendSelf(res)
			return
		}
		if ans.Err != nil {
			if e.listing != cloud.ListingNone { // nothing was asked: no news
				e.log.WithField("volume", a.id).Warnf("verify failed: %v", ans.Err)
			}
			return
		}
		for n, att := range ans.Attached {
			a.sendSelf(&messages.AttachmentVerified{VolumeId: string(a.id), Node: n, Attached: att, AsOfUnixNano: asOf})
		}
	})
}

// sendSelf delivers a goroutine's result to this incarnation. Once it has
// stopped or restarted (its lifetime ended) the result is dropped:
// the next incarnation rebuilds from the store and the cloud (and fences a
// node where a detach may still land), and a send by name could reach a
// new actor of the same name while Proto.Actor is still initialising it.
func (a *volumeActor) sendSelf(msg any) {
	if a.life.Err() != nil {
		return
	}
	a.env.guard.Send(a.self, msg)
}
