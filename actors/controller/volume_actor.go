package controller

import (
	"hash/fnv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// volumeActor serializes every decision about one volume. Its state is a
// cache of the store and the cloud, rebuilt on every start.
type volumeActor struct {
	env     *env
	id      cloud.VolumeID
	ref     events.Ref
	core    *volume.Volume
	self    *actor.PID
	timer   timer
	deleted bool
	rev     uint64 // store revision of the desired state this actor has
	// states: attachments per state last told to the observer.
	states map[string]int
	// retireAt: when an idle actor of a deleted volume stops (zero: not
	// idle).
	retireAt time.Time
	// restoring holds the messages that arrive before the start-up verify
	// answers; they are replayed after it, in order.
	restoring bool
	queued    []any
	base      *volume.Restored
	// life is this incarnation's: its cloud calls are cancelled when it
	// stops or restarts.
	life        *lifetime
	incarnation uint64
	// epoch is this incarnation's claim on the volume (store.Fences):
	// its intents are written only while no newer incarnation, here or on
	// another member, has claimed the volume.
	epoch uint64
	// passiveAt: when this settled actor stops if it hears nothing
	// before (passivate.go); passivating: it decided to.
	passiveAt   time.Time
	passivating bool
	// statusAsks: GetVolumeStatus senders answered once restored.
	statusAsks []*actor.PID
}

// named gives the actor its identity, from its name (see the shared Props
// of New); Started is every incarnation's first message.
func (a *volumeActor) named(ctx actor.Context) {
	a.id = cloud.VolumeID(strings.TrimPrefix(a.env.identity(ctx), volumePrefix))
	a.ref = events.Ref{Kind: events.KindVolume, Name: string(a.id)}
}

func (a *volumeActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		a.env.liveVolumes.Add(1)
		a.named(ctx)
		a.onStarted(ctx)
	case *actor.Restarting:
		a.env.liveVolumes.Add(-1) // Started comes again
		a.shutdown()
	case *actor.Stopping:
		a.shutdown()
	case *actor.Stopped:
		a.env.liveVolumes.Add(-1)
		a.env.volumeSettled(a.id)
		a.env.lookup.stopped(volumePrefix + string(a.id))
	default:
		if a.passivating {
			a.handBack(ctx)
			return
		}
		a.receive(ctx)
	}
}

// receive handles the messages of a live incarnation.
func (a *volumeActor) receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.Crash:
		panic("volume " + string(a.id) + ": crash requested: " + m.Reason)
	case *messages.GetVolumeStatus:
		if a.restoring && ctx.Sender() != nil && a.env.started.Load() != 0 {
			// Answered once rebuilt: a volume woken from passivation by
			// this very question knows nothing before. (During the
			// controller's own restore the answer comes at once, saying
			// not Restored: that restore may wait minutes for agents.)
			a.statusAsks = append(a.statusAsks, ctx.Sender())
			return
		}
		ctx.Respond(a.status())
	case *messages.VolumeRestored:
		a.onRestored(ctx, m)
	default:
		if a.restoring {
			a.queued = append(a.queued, m)
			return
		}
		a.handle(ctx, m)
		a.maybeRetire(ctx)
		_, woke := m.(*messages.Wake)
		a.maybePassivate(ctx, woke)
	}
}

func (a *volumeActor) handle(ctx actor.Context, msg any) {
	var ev volume.Event
	switch m := msg.(type) {
	case *messages.SetDesiredNodes:
		if m.Revision <= a.rev {
			return // older than (or as old as) what this actor already knows
		}
		a.rev = m.Revision
		a.deleted = m.Deleted
		if !m.Deleted {
			a.ref.UID = m.ObjectUid // a deleted volume's leftovers stay its own
		}
		ev = volume.DesiredChanged{Mode: modeFromProto(m.AccessMode), Desired: nodeNames(m.Nodes)}
	case *messages.NodeVolumeStateChanged:
		ev = volume.NodeChanged{Node: cloud.NodeName(m.Node), Info: nodeInfoFromProto(m)}
	case *messages.AttachFinished:
		ev = volume.AttachDone{Node: cloud.NodeName(m.Node), Op: m.Op, DevicePath: m.DevicePath, Err: cloud.Kind(m.ErrorKind), Msg: m.Error}
	case *messages.DetachFinished:
		ev = volume.DetachDone{Node: cloud.NodeName(m.Node), Op: m.Op, Err: cloud.Kind(m.ErrorKind), Msg: m.Error}
	case *messages.DetachPrepared:
		ev = volume.DetachPrepared{Node: cloud.NodeName(m.Node), Op: m.Op, OK: m.Ok, Msg: m.Error}
	case *messages.AttachRecorded:
		ev = volume.AttachRecorded{Node: cloud.NodeName(m.Node)}
	case *messages.AttachNotRecorded:
		ev = volume.ReportFailed{Node: cloud.NodeName(m.Node)}
	case *messages.AttachmentVerified:
		ev = volume.Verified{Node: cloud.NodeName(m.Node), Attached: m.Attached, DevicePath: m.DevicePath, AsOf: fromNanos(m.AsOfUnixNano)}
	case *messages.Wake:
		a.timer.fired(a.env.clock.Now())
		ev = volume.Tick{}
	default:
		return
	}
	a.step(ctx, ev)
}

func (a *volumeActor) step(ctx actor.Context, ev volume.Event) {
	now := a.env.clock.Now()
	woken := false
	for _, eff := range a.core.Step(now, ev) {
		_, wake := eff.(volume.WakeAt)
		woken = woken || wake
		a.run(ctx, eff)
	}
	if !woken && a.core.Settled() {
		// Nothing pending: a timer set for a report's acknowledgement (or
		// any earlier wake) would only bring a Tick that does nothing. A
		// fleet at rest keeps no timer per volume.
		a.timer.stop()
	}
	a.reportStates()
}

// reportStates tells the observer how this volume's attachment states
// changed since the last report.
func (a *volumeActor) reportStates() {
	obs := a.env.cfg.Observer
	if obs == nil || a.core == nil {
		return
	}
	now := a.core.StateCounts()
	delta := map[string]int{}
	for s, n := range now {
		if d := n - a.states[s]; d != 0 {
			delta[s] = d
		}
	}
	for s, n := range a.states {
		if _, ok := now[s]; !ok {
			delta[s] = -n
		}
	}
	if len(delta) > 0 {
		obs.VolumeStates(delta)
	}
	a.states = now
}

// maybeRetire stops an actor whose volume was deleted and is attached
// nowhere, once nothing is queued or in flight. A message that raced with
// the stop is not lost for good: the lookup brings the actor back if the
// store wants the volume again.
func (a *volumeActor) maybeRetire(ctx actor.Context) {
	if a.restoring || !a.deleted || !a.core.Idle() {
		a.retireAt = time.Time{}
		return
	}
	// Idle for RetireAfter first: an actor spawned by a message (a sync
	// finding, say) must not stop before that message arrives.
	now := a.env.clock.Now()
	if a.retireAt.IsZero() {
		a.retireAt = now.Add(a.env.cfg.RetireAfter)
	}
	if now.Before(a.retireAt) {
		a.timer.wakeAt(a.env, a.self, a.retireAt)
		return
	}
	a.env.lookup.retire(volumePrefix + string(a.id))
	ctx.Poison(ctx.Self())
}

func (a *volumeActor) shutdown() {
	// This incarnation's attachments leave the gauge; the next one counts
	// its own.
	if obs := a.env.cfg.Observer; obs != nil && len(a.states) > 0 {
		delta := map[string]int{}
		for s, n := range a.states {
			delta[s] = -n
		}
		obs.VolumeStates(delta)
		a.states = nil
	}
	a.timer.stop()
	if a.life != nil {
		a.life.end()
	}
}

// onStarted rebuilds from the store (desired state, node statuses) and asks
// the cloud about every candidate node in one targeted call per batch.
// Until the answer arrives no operation starts.
func (a *volumeActor) onStarted(ctx actor.Context) {
	a.self = ctx.Self()
	a.life = newLifetime(a.env.ctx)
	a.incarnation = incarnationBase()
	a.core = volume.NewShared(a.id, a.volumeConfig(), a.incarnation)
	a.restoring = true
	epoch, err := a.env.store.Claim(store.VolumeOwner(a.id))
	if err != nil {
		panic("volume " + string(a.id) + ": claiming the volume: " + err.Error())
	}
	a.epoch = epoch
	base, candidates, err := a.readStore()
	if err != nil {
		// The store is the source of truth: without it, fail and let the
		// supervisor retry with backoff.
		panic("volume " + string(a.id) + ": rebuild from store: " + err.Error())
	}
	a.base = &base
	a.verifyNodes(candidates, true) // the verifier's answer comes as VolumeRestored
}

// fenced: a newer incarnation of this volume claimed it (distributed mode:
// another activation, on this member or another). This one must not act
// any more: it stops, and whatever it was asked goes to the new owner.
// Called from the goroutine of a cloud call.
func (a *volumeActor) fenced(err error) {
	a.env.log.WithField("volume", a.id).Warnf("stopping a stale activation: %v", err)
	a.env.guard.Stop(a.self)
}

// volumeConfig is the machine's configuration: the controller's, shared
// by every volume (it is read only), unless a seed asks each volume for
// its own random source.
func (a *volumeActor) volumeConfig() *volume.Config {
	if a.env.cfg.Seed == 0 {
		return &a.env.volumeCfg
	}
	cfg := a.env.cfg.Volume
	cfg.Rand = newRand(a.seed())
	return &cfg
}

func (a *volumeActor) seed() uint64 {
	if a.env.cfg.Seed == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(a.id))
	return a.env.cfg.Seed ^ h.Sum64()
}

// readStore gives this incarnation's snapshot: the one Start read in bulk
// if this is the volume's first incarnation (restore_handoff.go), else
// the store's now.
func (a *volumeActor) readStore() (volume.Restored, []cloud.NodeName, error) {
	snap, ok := a.env.restore.handoff.take(a.id)
	if !ok {
		var err error
		if snap, err = ReadVolume(a.env.store, a.id); err != nil {
			return snap.Restored, nil, err
		}
	}
	a.rev, a.deleted, a.ref.UID = snap.Revision, snap.Deleted, snap.ObjectUID
	return snap.Restored, snap.Candidates, nil
}

func (a *volumeActor) onRestored(ctx actor.Context, m *messages.VolumeRestored) {
	if !a.restoring || m.Incarnation != a.incarnation {
		return // an earlier incarnation's verify
	}
	a.restoring = false
	a.env.volumeSettled(a.id)
	r := *a.base
	r.AsOf = fromNanos(m.AsOfUnixNano)
	if !m.VerifyFailed {
		r.Truth = map[cloud.NodeName]bool{}
		for n, att := range m.Attached {
			r.Truth[cloud.NodeName(n)] = att
		}
	} else if a.env.listing != cloud.ListingNone {
		a.env.log.WithField("volume", a.id).Warnf("start-up verify failed: trusting node statuses, and holding every node of the intent journal Uncertain until an idempotent attach or detach or newer truth settles it: %s", m.Error)
	}
	a.base = nil // release the snapshot
	a.step(ctx, r)
	queued := a.queued
	a.queued = nil
	for _, q := range queued {
		a.handle(ctx, q)
	}
	asks := a.statusAsks
	a.statusAsks = nil
	for _, to := range asks {
		ctx.Send(to, a.status())
	}
	a.maybeRetire(ctx)
	a.maybePassivate(ctx, false)
}

func (a *volumeActor) status() *messages.VolumeStatus {
	st := &messages.VolumeStatus{VolumeId: string(a.id), ObjectUid: a.ref.UID}
	if a.core == nil {
		return st
	}
	fillStatus(st, a.core.Status())
	return st
}

// fillStatus adds s, a volume's state, to st.
func fillStatus(st *messages.VolumeStatus, s volume.Status) {
	st.AccessMode = modeToProto(s.Mode)
	st.Restored = s.Restored
	for _, n := range s.Desired {
		st.DesiredNodes = append(st.DesiredNodes, string(n))
	}
	for _, n := range sortedKeys(s.Nodes) {
		if s.Nodes[n].InUse {
			st.NodesInUse = append(st.NodesInUse, string(n))
		}
	}
	for _, n := range sortedKeys(s.Attachments) {
		at := s.Attachments[n]
		st.Attachments = append(st.Attachments, &messages.VolumeAttachment{Node: string(n), State: at.State.String(), DevicePath: at.DevicePath})
	}
}
