package agent

import (
	"context"
	"maps"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/reconciler"
)

// Host is what an agent's runner (Runner) needs from whoever runs it: the
// Proto.Actor shell (agentActor, shell.go) or the simulation's
// deterministic scheduler (bootstrap/verify/simulation). One host serves
// one incarnation. Its methods are called from the incarnation's own turn
// (SendSelf also from the goroutines of mount calls) and return at once.
type Host interface {
	// Now reads the clock.
	Now() time.Time
	// SendController sends msg (a protobuf message) to this node's
	// controller-side node actor.
	SendController(msg any)
	// SendSelf delivers msg (a protobuf message) to this incarnation in a
	// later turn.
	SendSelf(msg any)
	// WakeAt replaces the pending timer: one messages.Wake at (or soon
	// after) at.
	WakeAt(at time.Time)
	// Record records (and logs) an event, about vol if not empty.
	Record(ev events.Event, vol cloud.VolumeID)
}

// Mounts carries out the four mount operations of one node; the runner
// calls them through Calls, off its turn. The agent's (disk.go) works on
// the data directory through a mount.Mounter and Devices; the
// simulation's on its simulated disk.
type Mounts interface {
	// Stage mounts vol's device at its global mount. ctx bounds what can
	// be cancelled (the device lookup), never the mount itself.
	Stage(ctx context.Context, vol cloud.VolumeID, device string) error
	Unstage(vol cloud.VolumeID) error
	Publish(vol cloud.VolumeID, uid string, readOnly bool) error
	Unpublish(vol cloud.VolumeID, uid string) error
}

// RunnerConfig is what one incarnation's runner is made of.
type RunnerConfig struct {
	Node       cloud.NodeName
	Host       Host
	Mounts     Mounts
	Calls      *Calls
	Core       *reconciler.Agent
	InstanceID cloud.InstanceID
	MaxVolumes int64
	// OpTimeout bounds a stage's cancellable part (0: no bound).
	OpTimeout time.Duration
	// Epoch is this incarnation's durable start count, told to the
	// controller in every AgentStarted.
	Epoch uint64
	// Context is the incarnation's: cancelled when it ends, it cancels
	// what a stage's context bounds (nil: never cancelled).
	Context context.Context
	// BreakStaleStatus is a TEST-ONLY hook that breaks I3 on purpose: the
	// runner gives its core a stale node status, a cache that never
	// forgets a volume once listed attached or in use. The simulation's
	// checker must catch the mounts it starts.
	BreakStaleStatus bool
	// OnCall, if set, is told of each mount call as the runner starts it
	// (Config.OnCall: chaos judges I3 against what the agent had
	// received). It must not block.
	OnCall func(n cloud.NodeName, vol cloud.VolumeID, r reconciler.Running)
}

// Runner is a node agent's shell without Proto.Actor: it turns messages
// into core events, steps the core and carries out its effects through
// its Host, its Mounts and Calls. The production actor and the simulation
// run this same code.
type Runner struct {
	cfg   RunnerConfig
	core  *reconciler.Agent
	beats int
	// waking: a Wake is pending, for wakeAt.
	waking bool
	wakeAt time.Time
	// running: the calls of earlier incarnations running when this one
	// attached to Calls (token), until the disk scan is stepped; results
	// that arrive before that wait in held.
	running  map[cloud.VolumeID]reconciler.Running
	token    uint64
	restored bool
	held     []*messages.MountFinished
	uids     objectUIDs
	// stale: what BreakStaleStatus feeds the core.
	stale reconciler.StatusChanged
}

// NewRunner returns the runner of one incarnation. It attaches to Calls
// at once: results of calls running now come to this incarnation.
func NewRunner(c RunnerConfig) *Runner {
	r := &Runner{cfg: c, core: c.Core}
	h := c.Host
	r.running, r.token = c.Calls.attach(func(m *messages.MountFinished) { h.SendSelf(m) })
	return r
}

// Detach stops delivering the results of mount calls to this incarnation
// (it ended); they go to the next one, or nowhere until it attaches.
func (r *Runner) Detach() { r.cfg.Calls.detach(r.token) }

// Running: the calls of earlier incarnations still running when this one
// started (for the disk scan's Restored).
func (r *Runner) Running() map[cloud.VolumeID]reconciler.Running { return r.running }

// Scanned starts the core from the disk scan (with Running), then steps
// the results held back meanwhile.
func (r *Runner) Scanned(rs reconciler.Restored) {
	r.step(rs)
	r.restored, r.running = true, nil // the core has them now
	held := r.held
	r.held = nil
	for _, m := range held {
		r.onMountFinished(m)
	}
}

// Handle handles one message from the controller, a timer or a mount
// call.
func (r *Runner) Handle(msg any) {
	switch m := msg.(type) {
	case *messages.NodeWorkloads:
		r.step(r.desired(m))
	case *messages.NodeStatusUpdated:
		st := statusFromProto(m)
		if r.cfg.BreakStaleStatus {
			st = r.staleStatus(st)
		}
		r.step(st)
	case *messages.MountFinished:
		r.onMountFinished(m)
	case *messages.Wake:
		r.waking = false
		r.step(reconciler.Tick{})
	}
}

// Status is the core's view.
func (r *Runner) Status() reconciler.Status { return r.core.Status() }

// onMountFinished steps a mount call's result, once the disk scan has been.
func (r *Runner) onMountFinished(m *messages.MountFinished) {
	if !r.restored {
		r.held = append(r.held, m)
		return
	}
	r.step(reconciler.OpDone{Volume: cloud.VolumeID(m.VolumeId), Op: m.Op, Err: m.Error, Terminal: m.Terminal})
}

// Heartbeat is the mailbox's part of a heartbeat: the first one (the
// hello) sends the heartbeat itself (the beater sends the rest); until the
// agent knows its desired state it asks for it, and now and then in case
// a snapshot was lost (revisions make repeats harmless); once ready it
// repeats its VolumesInUse report (at-most-once delivery must not leave
// the controller with a stale one).
func (r *Runner) Heartbeat() {
	h := r.cfg.Host
	if r.beats == 0 {
		h.SendController(r.HeartbeatMsg())
	}
	st := r.core.Status()
	r.beats++
	if !st.Ready || r.beats%resyncEvery == 0 {
		h.SendController(&messages.AgentStarted{Node: string(r.cfg.Node), AgentEpoch: r.cfg.Epoch})
	}
	if st.Ready {
		h.SendController(inUseMsg(r.cfg.Node, st.InUse, st.Seq))
	}
}

// HeartbeatMsg is this agent's heartbeat: its node, and what its machine
// is to the cloud if it knows. It is never changed once sent, so one can
// be sent again and again.
func (r *Runner) HeartbeatMsg() *messages.Heartbeat {
	return &messages.Heartbeat{Node: string(r.cfg.Node), InstanceId: string(r.cfg.InstanceID), MaxVolumes: r.cfg.MaxVolumes}
}

func (r *Runner) step(ev reconciler.Event) {
	for _, eff := range r.core.Step(r.cfg.Host.Now(), ev) {
		r.run(eff)
	}
}

func (r *Runner) ctx() context.Context {
	if r.cfg.Context == nil {
		return context.Background()
	}
	return r.cfg.Context
}

// staleStatus is the BreakStaleStatus hook: st merged into every status
// received before.
func (r *Runner) staleStatus(st reconciler.StatusChanged) reconciler.StatusChanged {
	if r.stale.Attached == nil {
		r.stale = reconciler.StatusChanged{Attached: map[cloud.VolumeID]string{}, InUse: map[cloud.VolumeID]bool{}}
	}
	maps.Copy(r.stale.Attached, st.Attached)
	maps.Copy(r.stale.InUse, st.InUse)
	r.stale.InUseSeq = max(r.stale.InUseSeq, st.InUseSeq)
	return reconciler.StatusChanged{Attached: maps.Clone(r.stale.Attached), InUse: maps.Clone(r.stale.InUse), InUseSeq: r.stale.InUseSeq}
}
