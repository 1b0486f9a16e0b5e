package controller

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Passivation: an attached, idle volume needs no live actor. A volume
// actor whose core is settled (attached where desired and nowhere else,
// nothing in flight, every report acknowledged) and that has heard
// nothing for Config.PassivateAfter stops itself; the next message sent
// to the volume spawns a new one, which rebuilds from the store and the
// cloud as after a restart (claim, store read, one batched verify) and
// then acts on that message. Nothing is lost meanwhile: from the moment
// the actor decides, the guard holds every message sent to it and hands
// them, in order, to the next actor (spawn.Guard.Retire). The sync pass
// tells only the volumes with findings, so a fleet at rest keeps live
// only the actors with work. Local actors only: a cluster's activations
// stay (their placement owns their lifecycle).

// maybePassivate runs after every message the actor acted on; woke says
// the message was its own timer's Wake (which does not count as news).
func (a *volumeActor) maybePassivate(ctx actor.Context, woke bool) {
	after := a.env.cfg.PassivateAfter
	if after <= 0 || a.passivating || a.restoring || a.deleted || a.core == nil || len(a.queued) > 0 || !a.core.Settled() {
		a.passiveAt = time.Time{}
		return
	}
	now := a.env.clock.Now()
	if !woke || a.passiveAt.IsZero() {
		a.passiveAt = now.Add(after)
	}
	if now.Before(a.passiveAt) {
		a.timer.wakeAt(a.env, a.self, a.passiveAt)
		return
	}
	if !a.env.lookup.passivate(volumePrefix + string(a.id)) {
		a.passiveAt = time.Time{}
		return
	}
	a.passivating = true
	a.timer.stop()
	ctx.Poison(ctx.Self()) // after what the mailbox holds: handed back (passivating)
}

// handBack gives the guard, for the next actor, a message that reached
// this one after it decided to passivate. Its own Wake carries nothing a
// restore does not redo.
func (a *volumeActor) handBack(ctx actor.Context) {
	if _, ok := ctx.Message().(*messages.Wake); ok {
		return
	}
	a.env.guard.HoldEarly(volumePrefix+string(a.id), ctx.Message(), ctx.Sender())
}

// LiveVolumeActors is how many volume actors run now: with passivation, a
// fleet at rest keeps only those with work.
func (c *Controller) LiveVolumeActors() int64 { return c.env.liveVolumes.Load() }

// dormantStatus is VolumeStatus of a dormant volume, from the store; false
// if the volume is not dormant (its actor answers).
func (c *Controller) dormantStatus(id cloud.VolumeID) (*messages.VolumeStatus, bool, error) {
	l, name := c.env.lookup, volumePrefix+string(id)
	if !l.Dormant(name) || l.guard.Exists(name) {
		return nil, false, nil
	}
	snap, err := ReadVolume(c.env.store, id)
	if err != nil {
		return nil, false, fmt.Errorf("controller: status of volume %q: %w", id, err)
	}
	r := snap.Restored
	settled := volume.Status{Mode: r.Mode, Restored: true, Desired: r.Desired, Nodes: r.Nodes, Attachments: make(map[cloud.NodeName]volume.Attachment, len(r.Listed))}
	for n, dev := range r.Listed {
		settled.Attachments[n] = volume.Attachment{State: volume.Attached, DevicePath: dev}
	}
	st := &messages.VolumeStatus{VolumeId: string(id), ObjectUid: snap.ObjectUID}
	fillStatus(st, settled)
	return st, true, nil
}
