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
	// VolumeRunner is this incarnation's shell logic (volume_runner.go):
	// the core, the desired state's revision, the start-up queue. Reset
	// at every start.
	VolumeRunner
	env   *env
	id    cloud.VolumeID
	ref   events.Ref
	self  *actor.PID
	timer timer
	// states: attachments per state last told to the observer.
	states map[string]int
	// retireAt: when an idle actor of a deleted volume stops (zero: not
	// idle).
	retireAt time.Time
	// life is this incarnation's: its cloud calls are cancelled when it
	// stops or restarts.
	life *lifetime
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
		_, woke := m.(*messages.Wake)
		if woke {
			a.timer.fired(a.env.clock.Now())
		}
		restoring := a.restoring
		a.Handle(m)
		a.afterStep()
		if restoring {
			return
		}
		a.maybeRetire(ctx)
		a.maybePassivate(ctx, woke)
	}
}

// afterStep follows what the runner did: the volume's UID, and the
// attachment states told to the observer.
func (a *volumeActor) afterStep() {
	a.ref.UID = a.uid
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
	incarnation := incarnationBase()
	epoch, err := a.env.store.Claim(store.VolumeOwner(a.id))
	if err != nil {
		panic("volume " + string(a.id) + ": claiming the volume: " + err.Error())
	}
	e := a.env
	a.init(VolumeRunnerConfig{ID: a.id, Host: volumeShell{a}, Core: volume.NewShared(a.id, a.volumeConfig(), incarnation),
		Cloud: e.cloud, CloudTimeout: e.cfg.CloudTimeout, Listing: e.listing, Log: e.log, Incarnation: incarnation, Epoch: epoch})
	snap, ok := a.env.restore.handoff.take(a.id)
	if !ok {
		if snap, err = ReadVolume(a.env.store, a.id); err != nil {
			// The store is the source of truth: without it, fail and let
			// the supervisor retry with backoff.
			panic("volume " + string(a.id) + ": rebuild from store: " + err.Error())
		}
	}
	// snap is this incarnation's: the one Start read in bulk if this is
	// the volume's first incarnation (restore_handoff.go), else the
	// store's now.
	a.deleted, a.uid, a.ref.UID = snap.Deleted, snap.ObjectUID, snap.ObjectUID
	a.Start(snap.Restored, snap.Revision, snap.Candidates) // the verifier's answer comes as VolumeRestored
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

func (a *volumeActor) onRestored(ctx actor.Context, m *messages.VolumeRestored) {
	if !a.restoring {
		return
	}
	a.Handle(m)
	if a.restoring {
		return // an earlier incarnation's verify
	}
	a.env.volumeSettled(a.id)
	a.afterStep()
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
