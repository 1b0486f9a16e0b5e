package controller

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// VolumeHost is what a volume's runner (VolumeRunner) needs from whoever
// runs it: the Proto.Actor shell (volumeActor, volume_shell.go) or the
// simulation's deterministic scheduler (bootstrap/verify/simulation). One
// host serves one incarnation of the volume. Every method but Call's
// steps and the answer of Verify is called from the incarnation's own turn
// and must return at once.
type VolumeHost interface {
	// Now reads the clock.
	Now() time.Time
	// SendNode sends msg (a protobuf message) to the node actor of n.
	SendNode(n cloud.NodeName, msg any)
	// SendSelf delivers msg (a protobuf message) to this incarnation, in a
	// later turn; dropped once the incarnation ended. Called from Call's
	// Finish and Verify's answer, which may run on other goroutines.
	SendSelf(msg any)
	// WakeAt asks for a messages.Wake at (or soon after) at; StopTimer
	// forgets the pending one.
	WakeAt(at time.Time)
	StopTimer()
	// Record records an event about this volume.
	Record(f volume.Record)
	// Verify asks the cloud, off this turn, whether the volume is attached
	// to each of nodes, and calls answer once with the result (never once
	// the incarnation ended).
	Verify(nodes []cloud.NodeName, answer func(VerifyAnswer))
	// Call carries out one cloud call off this turn, in order: op.Prepare
	// (nothing is sent yet), then, unless Prepare failed, op.Send, then
	// op.Finish with the error. ctx bounds the call by CloudTimeout and is
	// cancelled when the incarnation ends; Finish gets ctx's error too. If
	// the incarnation ended before Prepare, Finish gets that error alone.
	Call(op CloudOp)
	// PutIntent writes an operation's intent to the store.
	PutIntent(in store.Intent) error
	// Resolve names the instance behind n (the controller's cache);
	// Forget drops it if err says the instance is gone.
	Resolve(ctx context.Context, n cloud.NodeName) (cloud.InstanceID, error)
	Forget(n cloud.NodeName, err error)
	// Fenced: a newer incarnation claimed the volume; this one must stop.
	Fenced(err error)
}

// CloudOp is one attach or detach, in the steps its host runs in order.
// Node, Op, Attach and Force describe it (for hosts that trace or check
// it); the runner never reads them back.
type CloudOp struct {
	Node    cloud.NodeName
	Op      uint64
	Attach  bool
	Force   string
	Prepare func(ctx context.Context) error
	Send    func(ctx context.Context) error
	Finish  func(err, ctxErr error)
}

// VolumeRunnerConfig is what one incarnation's runner is made of.
type VolumeRunnerConfig struct {
	ID           cloud.VolumeID
	Host         VolumeHost
	Core         *volume.Volume
	Cloud        cloud.Provider
	CloudTimeout time.Duration
	Listing      cloud.Listing
	Log          logrus.FieldLogger
	// Incarnation numbers the core's operations; Epoch is the
	// incarnation's claim on the volume (store.Fences), written with
	// every intent.
	Incarnation, Epoch uint64
	// BreakI2 is a TEST-ONLY hook that breaks I2 on purpose, in the
	// shell: the runner tells its core that no node uses the volume, and
	// asks every detach's preparation as forced. The simulation's checker
	// must catch the detaches that follow.
	BreakI2 bool
}

// VolumeRunner is a volume actor's shell without Proto.Actor: it turns
// messages into core events, steps the core and carries out its effects
// through its VolumeHost. The production actor and the simulation run
// this same code.
type VolumeRunner struct {
	id          cloud.VolumeID
	host        VolumeHost
	core        *volume.Volume
	cloud       cloud.Provider
	timeout     time.Duration
	listing     cloud.Listing
	log         logrus.FieldLogger
	incarnation uint64
	epoch       uint64
	breakI2     bool
	rev         uint64 // store revision of the desired state this incarnation has
	deleted     bool
	uid         string // the volume object's UID, from the desired state
	// restoring holds the messages that arrive before the start-up verify
	// answers; they are replayed after it, in order.
	restoring bool
	queued    []any
	base      *volume.Restored
}

// NewVolumeRunner returns the runner of one incarnation; Start starts it.
func NewVolumeRunner(c VolumeRunnerConfig) *VolumeRunner {
	r := &VolumeRunner{}
	r.init(c)
	return r
}

func (r *VolumeRunner) init(c VolumeRunnerConfig) {
	log := c.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	*r = VolumeRunner{id: c.ID, host: c.Host, core: c.Core, cloud: c.Cloud, timeout: c.CloudTimeout,
		listing: c.Listing, log: log, incarnation: c.Incarnation, epoch: c.Epoch, breakI2: c.BreakI2}
}

// Start begins the incarnation from the store's snapshot (base, read at
// revision rev) and asks the cloud about candidates; until the answer
// (messages.VolumeRestored) no operation starts.
func (r *VolumeRunner) Start(base volume.Restored, rev uint64, candidates []cloud.NodeName) {
	r.rev, r.restoring, r.base, r.queued = rev, true, &base, nil
	r.verifyNodes(candidates, true)
}

// Handle handles one message of this incarnation: the start-up verify's
// answer, or (queued until it came) anything else.
func (r *VolumeRunner) Handle(msg any) {
	if m, ok := msg.(*messages.VolumeRestored); ok {
		r.onRestored(m)
		return
	}
	if r.restoring {
		r.queued = append(r.queued, msg)
		return
	}
	r.handle(msg)
}

// Restoring: the start-up verify has not answered yet.
func (r *VolumeRunner) Restoring() bool { return r.restoring }

func (r *VolumeRunner) onRestored(m *messages.VolumeRestored) {
	if !r.restoring || m.Incarnation != r.incarnation {
		return // an earlier incarnation's verify
	}
	r.restoring = false
	rs := *r.base
	rs.AsOf = fromNanos(m.AsOfUnixNano)
	if !m.VerifyFailed {
		rs.Truth = map[cloud.NodeName]bool{}
		for n, att := range m.Attached {
			rs.Truth[cloud.NodeName(n)] = att
		}
	} else if r.listing != cloud.ListingNone {
		r.log.WithField("volume", r.id).Warnf("start-up verify failed: trusting node statuses, and holding every node of the intent journal Uncertain until an idempotent attach or detach or newer truth settles it: %s", m.Error)
	}
	r.base = nil // release the snapshot
	r.step(rs)
	queued := r.queued
	r.queued = nil
	for _, q := range queued {
		r.handle(q)
	}
}

func (r *VolumeRunner) handle(msg any) {
	var ev volume.Event
	switch m := msg.(type) {
	case *messages.SetDesiredNodes:
		if m.Revision <= r.rev {
			return // older than (or as old as) what this incarnation already knows
		}
		r.rev = m.Revision
		r.deleted = m.Deleted
		if !m.Deleted {
			r.uid = m.ObjectUid // a deleted volume's leftovers stay its own
		}
		ev = volume.DesiredChanged{Mode: modeFromProto(m.AccessMode), Desired: nodeNames(m.Nodes)}
	case *messages.NodeVolumeStateChanged:
		info := nodeInfoFromProto(m)
		info.InUse = info.InUse && !r.breakI2
		ev = volume.NodeChanged{Node: cloud.NodeName(m.Node), Info: info}
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
		ev = volume.Tick{}
	default:
		return
	}
	r.step(ev)
}

func (r *VolumeRunner) step(ev volume.Event) {
	woken := false
	for _, eff := range r.core.Step(r.host.Now(), ev) {
		_, wake := eff.(volume.WakeAt)
		woken = woken || wake
		r.run(eff)
	}
	if !woken && r.core.Settled() {
		// Nothing pending: a timer set for a report's acknowledgement (or
		// any earlier wake) would only bring a Tick that does nothing. A
		// fleet at rest keeps no timer per volume.
		r.host.StopTimer()
	}
}

// Status is the core's view of the volume (nil core: the zero Status).
func (r *VolumeRunner) Status() volume.Status {
	if r.core == nil {
		return volume.Status{}
	}
	return r.core.Status()
}
