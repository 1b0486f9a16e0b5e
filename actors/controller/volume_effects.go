package controller

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// run carries out one effect. Cloud calls start a goroutine whose result
// comes back to this actor as a message.
func (a *volumeActor) run(ctx actor.Context, eff volume.Effect) {
	e := a.env
	switch f := eff.(type) {
	case volume.CallAttach:
		go a.callAttach(f)
	case volume.CallDetach:
		go a.callDetach(f)
	case volume.PrepareDetach:
		e.guard.Send(e.lookup.Node(f.Node), &messages.PrepareDetach{Node: string(f.Node), VolumeId: string(a.id), Op: f.Op, Force: f.Force})
	case volume.ReportAttached:
		e.guard.Send(e.lookup.Node(f.Node), &messages.MarkVolumeAttached{Node: string(f.Node), VolumeId: string(a.id), DevicePath: f.DevicePath})
	case volume.ReportDetached:
		e.guard.Send(e.lookup.Node(f.Node), &messages.MarkVolumeDetached{Node: string(f.Node), VolumeId: string(a.id)})
	case volume.VerifyNode:
		go a.verifyNodes(a.ctx, []cloud.NodeName{f.Node}, false)
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
	c, cancel := context.WithTimeout(a.ctx, e.cfg.CloudTimeout)
	defer cancel()
	intent := store.Intent{Volume: a.id, Node: n, Op: op, Attach: attach, Deadline: e.clock.Now().Add(e.cfg.CloudTimeout)}
	if err := e.store.PutIntent(intent); err != nil {
		return fmt.Errorf("%w: recording the operation before sending it: %w", cloud.ErrRetryable, err)
	}
	if err := c.Err(); err != nil {
		return err // this incarnation died while recording: send nothing
	}
	inst, err := e.inst.resolve(c, n)
	if err == nil {
		err = call(c, inst)
		e.inst.forget(n, err)
	}
	return err
}

func (a *volumeActor) verifyStart(c context.Context, nodes []cloud.NodeName) {
	a.verifyNodes(c, nodes, true)
}

// verifyNodes asks the cloud, in one call per batch of instances, whether
// this volume is attached to each node. At start-up the answer is one
// VolumeRestored; later, one AttachmentVerified per node.
func (a *volumeActor) verifyNodes(c context.Context, nodes []cloud.NodeName, start bool) {
	e := a.env
	asOf := e.clock.Now().UnixNano()
	attached := map[string]bool{}
	var failure error
	for _, batch := range syncer.Batches(nodes, e.cloud.BatchSize()) {
		if err := a.verifyBatch(c, batch, attached); err != nil {
			failure = err
			break
		}
	}
	if start {
		res := &messages.VolumeRestored{VolumeId: string(a.id), Attached: attached, AsOfUnixNano: asOf, Incarnation: a.incarnation}
		if failure != nil {
			res.VerifyFailed, res.Error = true, failure.Error()
		}
		a.sendSelf(res)
		return
	}
	if failure != nil {
		e.log.WithField("volume", a.id).Warnf("verify failed: %v", failure)
		return
	}
	for n, att := range attached {
		a.sendSelf(&messages.AttachmentVerified{VolumeId: string(a.id), Node: n, Attached: att, AsOfUnixNano: asOf})
	}
}

func (a *volumeActor) verifyBatch(c context.Context, batch []cloud.NodeName, out map[string]bool) error {
	e := a.env
	ctx, cancel := context.WithTimeout(c, e.cfg.CloudTimeout)
	defer cancel()
	query := map[cloud.InstanceID][]cloud.VolumeID{}
	byInst := map[cloud.InstanceID]cloud.NodeName{}
	for _, n := range batch {
		inst, err := e.inst.resolve(ctx, n)
		if cloud.Classify(err) == cloud.KindNotFound {
			out[string(n)] = false // no instance backs the node: nothing attached there
			continue
		}
		if err != nil {
			return fmt.Errorf("resolve node %q: %w", n, err)
		}
		query[inst] = []cloud.VolumeID{a.id}
		byInst[inst] = n
	}
	if len(query) == 0 {
		return nil
	}
	res, err := e.cloud.VolumesAreAttached(ctx, query)
	if err != nil {
		return err
	}
	for inst, n := range byInst {
		out[string(n)] = res[inst][a.id]
	}
	return nil
}

// sendSelf delivers a goroutine's result to this incarnation. Once it has
// stopped or restarted (its context is cancelled) the result is dropped:
// the next incarnation rebuilds from the store and the cloud (and fences a
// node where a detach may still land), and a send by name could reach a
// new actor of the same name while Proto.Actor is still initialising it.
func (a *volumeActor) sendSelf(msg any) {
	if a.ctx.Err() != nil {
		return
	}
	a.env.guard.Send(a.self, msg)
}
