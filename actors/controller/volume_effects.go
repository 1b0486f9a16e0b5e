package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// run carries out one effect. Cloud calls go through the host's Call
// (the actor's call queue, callqueue.go); their result comes back to this
// incarnation as a message.
func (r *VolumeRunner) run(eff volume.Effect) {
	h := r.host
	switch f := eff.(type) {
	case volume.CallAttach:
		r.callAttach(f)
	case volume.CallDetach:
		r.callDetach(f)
	case volume.PrepareDetach:
		if r.breakI2 && f.Force == "" {
			f.Force = "broken-by-test-hook"
		}
		h.SendNode(f.Node, &messages.PrepareDetach{Node: string(f.Node), VolumeId: string(r.id), Op: f.Op, Force: f.Force})
	case volume.ReportAttached:
		h.SendNode(f.Node, &messages.MarkVolumeAttached{Node: string(f.Node), VolumeId: string(r.id), DevicePath: f.DevicePath})
	case volume.ReportDetached:
		h.SendNode(f.Node, &messages.MarkVolumeDetached{Node: string(f.Node), VolumeId: string(r.id)})
	case volume.VerifyNode:
		r.verifyNodes([]cloud.NodeName{f.Node}, false)
	case volume.Record:
		h.Record(f)
	case volume.WakeAt:
		h.WakeAt(f.At)
	default:
		panic(fmt.Sprintf("controller: unknown volume effect %T", eff))
	}
}

func (r *VolumeRunner) callAttach(f volume.CallAttach) {
	res := &messages.AttachFinished{VolumeId: string(r.id), Node: string(f.Node), Op: f.Op}
	r.callCloud(CloudOp{Node: f.Node, Op: f.Op, Attach: true}, func(c context.Context, inst cloud.InstanceID) (err error) {
		res.DevicePath, err = r.cloud.Attach(c, r.id, inst)
		return err
	}, func(err error) {
		if err != nil {
			res.ErrorKind, res.Error = int32(cloud.Classify(err)), err.Error()
		}
		r.host.SendSelf(res)
	})
}

func (r *VolumeRunner) callDetach(f volume.CallDetach) {
	res := &messages.DetachFinished{VolumeId: string(r.id), Node: string(f.Node), Op: f.Op}
	r.callCloud(CloudOp{Node: f.Node, Op: f.Op, Force: f.Force}, func(c context.Context, inst cloud.InstanceID) error {
		return r.cloud.Detach(c, r.id, inst)
	}, func(err error) {
		if err != nil {
			res.ErrorKind, res.Error = int32(cloud.Classify(err)), err.Error()
		}
		r.host.SendSelf(res)
	})
}

// callCloud sends one attach or detach of this volume on op.Node, bounded
// by CloudTimeout. It records the operation's intent, with that deadline,
// BEFORE sending it: a call once sent may land even if this incarnation
// dies, and the next one must know until when (volume.InFlight). Without
// the intent recorded nothing is sent, and the failure is retryable.
func (r *VolumeRunner) callCloud(op CloudOp, call func(context.Context, cloud.InstanceID) error, done func(error)) {
	h := r.host
	var intent store.Intent
	var inst cloud.InstanceID
	sent := false
	op.Prepare = func(c context.Context) error {
		intent = store.Intent{Volume: r.id, Node: op.Node, Op: op.Op, Attach: op.Attach, Deadline: h.Now().Add(r.timeout), Epoch: r.epoch}
		if err := h.PutIntent(intent); err != nil {
			if errors.Is(err, store.ErrFenced) {
				h.Fenced(err)
			}
			return fmt.Errorf("%w: recording the operation before sending it: %w", cloud.ErrRetryable, err)
		}
		if err := c.Err(); err != nil {
			return err // this incarnation died while recording: send nothing
		}
		var err error
		inst, err = h.Resolve(c, op.Node)
		return err
	}
	op.Send = func(c context.Context) error {
		sent = true
		return call(c, inst)
	}
	op.Finish = func(err, ctxErr error) {
		if sent {
			h.Forget(op.Node, err)
			r.landed(intent, err, ctxErr)
		}
		done(err)
	}
	h.Call(op)
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
func (r *VolumeRunner) landed(intent store.Intent, callErr, ctxErr error) {
	if ctxErr != nil || errors.Is(callErr, context.Canceled) || errors.Is(callErr, context.DeadlineExceeded) {
		return
	}
	intent.Deadline = r.host.Now()
	if err := r.host.PutIntent(intent); err != nil {
		r.log.WithField("volume", r.id).Debugf("keeping the intent's deadline: %v", err)
	}
}

// verifyNodes asks the cloud (the actor: through the verifier,
// verifier.go, which shares one cloud call per batch of instances with
// every other volume asking at the time) whether this volume is attached
// to each node. At start-up the answer is one VolumeRestored; later, one
// AttachmentVerified per node. Asking never blocks.
func (r *VolumeRunner) verifyNodes(nodes []cloud.NodeName, start bool) {
	incarnation, h := r.incarnation, r.host
	h.Verify(nodes, func(ans VerifyAnswer) {
		asOf := ans.AsOf.UnixNano()
		if start {
			res := &messages.VolumeRestored{VolumeId: string(r.id), Attached: ans.Attached, AsOfUnixNano: asOf, Incarnation: incarnation}
			if ans.Err != nil {
				res.VerifyFailed, res.Error = true, ans.Err.Error()
			}
			h.SendSelf(res)
			return
		}
		if ans.Err != nil {
			if r.listing != cloud.ListingNone { // nothing was asked: no news
				r.log.WithField("volume", r.id).Warnf("verify failed: %v", ans.Err)
			}
			return
		}
		for _, n := range sortedKeys(ans.Attached) {
			h.SendSelf(&messages.AttachmentVerified{VolumeId: string(r.id), Node: n, Attached: ans.Attached[n], AsOfUnixNano: asOf})
		}
	})
}
