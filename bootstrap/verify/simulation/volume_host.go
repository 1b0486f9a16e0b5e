package simulation

import (
	"context"
	"io"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// quiet is the runners' logger: the trace says what matters.
var quiet = func() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}()

// volSim is a volume actor: the production runner (controller.VolumeRunner)
// of its live incarnation, hosted by this scheduler (volHost).
type volSim struct {
	w      *world
	id     cloud.VolumeID
	alive  bool
	inc    uint64
	runner *controller.VolumeRunner
	timer  *timer
}

func (v *volSim) incarnation() uint64 { return v.inc }
func (v *volSim) isAlive() bool       { return v.alive }
func (v *volSim) addr() addr          { return volAddr(v.id) }

// start is the shell's onStarted: a new core and runner, the store
// snapshot (controller.ReadVolume, as the shell reads it), then the
// targeted verify; until it answers, messages are queued (by the runner).
func (v *volSim) start() {
	w := v.w
	v.inc++
	v.alive, v.timer = true, &timer{}
	cfg := w.cfg.Volume
	cfg.CloudTimeout = w.cfg.CloudTimeout
	cfg.Rand = w.plan.site("jitter " + v.addr().String()).float
	base := w.incarnationBase(v.addr())
	v.runner = controller.NewVolumeRunner(controller.VolumeRunnerConfig{ID: v.id, Host: &volHost{v: v, inc: v.inc},
		Core: volume.New(v.id, cfg, base), Cloud: w.cloud, CloudTimeout: w.cfg.CloudTimeout, Listing: cloud.ListingOf(w.cloud),
		Log: quiet, Incarnation: base, BreakI2: w.cfg.BreakI2})
	snap, _ := controller.ReadVolume(w.st, v.id)
	for n, info := range snap.Restored.Nodes {
		snap.Restored.Nodes[n] = w.hookInfo(info)
	}
	r := snap.Restored
	w.tracef("%s starts (incarnation %d): desired %v listed %v detaching %v", v.addr(), v.inc, r.Desired, r.Listed, r.Detaching)
	v.runner.Start(r, snap.Revision, snap.Candidates)
}

func (v *volSim) kill() { v.alive, v.runner = false, nil }

func (v *volSim) receive(_ addr, msg any) {
	if _, ok := msg.(wakeMsg); ok {
		msg = &messages.Wake{}
	}
	v.runner.Handle(msg)
}

// hookInfo is the BreakI2 hook on the store snapshot a volume starts
// from (the runner's own hook, VolumeRunnerConfig.BreakI2, covers what it
// hears later): no node uses the volume.
func (w *world) hookInfo(i volume.NodeInfo) volume.NodeInfo {
	if w.cfg.BreakI2 {
		i.InUse = false
	}
	return i
}

// volHost is the VolumeHost of one incarnation of a volume: the
// scheduler's sends, timers and clock, the sim cloud with the run's cloud
// faults, the store.
type volHost struct {
	v   *volSim
	inc uint64
	// dup: the result being finished is delivered twice (a fault).
	dup time.Duration
}

func (h *volHost) live() bool     { return h.v.alive && h.v.inc == h.inc }
func (h *volHost) Now() time.Time { return h.v.w.now }

func (h *volHost) SendNode(n cloud.NodeName, msg any) {
	h.v.w.send(h.v.addr(), nodeAddr(n), msg)
}

// SendSelf delivers to this incarnation, through the mailbox (it
// survives a restart of the actor, not of the controller), unless the
// incarnation ended before the send: as the shell's.
func (h *volHost) SendSelf(msg any) {
	w := h.v.w
	if !h.live() {
		return
	}
	w.sendResult(w.now, cloudAddr, h.v.addr(), w.ctrlEpoch, msg)
	if h.dup > 0 {
		w.sendResult(w.now.Add(h.dup), cloudAddr, h.v.addr(), w.ctrlEpoch, msg)
	}
}

func (h *volHost) WakeAt(at time.Time) {
	if h.live() {
		h.v.w.wakeAt(h.v.timer, h.v.addr(), at)
	}
}

func (h *volHost) StopTimer() {
	if h.live() {
		h.v.timer.stop()
	}
}

func (h *volHost) Record(f volume.Record) {
	h.v.w.tracef("%s event %s node=%s: %s", h.v.addr(), f.Type, f.Node, f.Message)
}

func (h *volHost) Verify(nodes []cloud.NodeName, answer func(controller.VerifyAnswer)) {
	h.v.w.verify(h, nodes, answer)
}

func (h *volHost) PutIntent(in store.Intent) error { return h.v.w.st.PutIntent(in) }

func (h *volHost) Resolve(_ context.Context, n cloud.NodeName) (cloud.InstanceID, error) {
	return h.v.w.resolve(n)
}

func (h *volHost) Forget(n cloud.NodeName, err error) { h.v.w.forgetInstance(n, err) }

// Fenced never happens: the simulation's incarnations claim no epoch.
func (h *volHost) Fenced(err error) { panic("simulation: fenced: " + err.Error()) }

// Call carries op out with the run's cloud faults: Prepare (the intent,
// the instance) at once; the call itself after the cloud's latency, or,
// hung, at the very end of CloudTimeout with its reply lost; it may fail
// before any effect (injected error), its response may be lost (the
// caller gets a timeout at CloudTimeout) or delivered twice. Finish runs
// when the reply reaches the caller's goroutine; its context is cancelled
// if the incarnation ended.
func (h *volHost) Call(op controller.CloudOp) {
	w := h.v.w
	verb, m := "detach", sim.MethodDetach
	if op.Attach {
		verb, m = "attach", sim.MethodAttach
	}
	vol := h.v.id
	what := verb + " " + string(vol) + " to " + string(op.Node)
	if !op.Attach {
		what = verb + " " + string(vol) + " from " + string(op.Node)
	}
	c := w.newCall("cloud "+verb+" "+string(vol), h.v.addr())
	perr := op.Prepare(bg)
	// Hangs draw from a site of their own, so that the draws of c.s stay
	// as they were before hangs existed (older regression seeds replay).
	hs := w.plan.site("cloud hang " + string(vol))
	lat, hang, edge := w.cloudLatency(c.s), w.chance(hs, w.cfg.Faults.HangCall), hs.uniform(time.Millisecond, 10*time.Millisecond)
	hang = hang && perr == nil
	if hang {
		w.fault("hang the %s until its deadline", what)
		lat = w.cfg.CloudTimeout - edge
	}
	w.after(lat, func() {
		w.injectCloudError(c.s, m, what, perr == nil)
		err := perr
		if perr == nil {
			if op.Force != "" {
				w.chk.forcing = vn{vol, op.Node}
			}
			err = op.Send(bg)
			w.chk.forcing = vn{}
			w.tracef("cloud: %s (force %q): err %v", what, op.Force, err)
		}
		h.reply(c, what, err, hang, op.Finish)
	})
}

// reply runs finish with err soon, or (lost response, or hung) with a
// timeout at the call's deadline, its result maybe delivered twice.
func (h *volHost) reply(c call, what string, err error, hung bool, finish func(err, ctxErr error)) {
	w := h.v.w
	s := c.s
	soon, later := s.uniform(0, 20*time.Millisecond), s.uniform(0, 2*time.Second)
	lost, dup := w.chance(s, w.cfg.Faults.LostResponse), w.chance(s, w.cfg.Faults.DupResult)
	if lost || hung {
		if lost {
			w.fault("lose the response to %s: %s (%v)", c.to, what, err)
		}
		w.at(c.issued.Add(w.cfg.CloudTimeout), func() {
			finish(context.DeadlineExceeded, h.ctxErr(context.DeadlineExceeded))
		})
		return
	}
	w.at(w.now.Add(soon), func() {
		if dup {
			w.fault("duplicate the result to %s: %s (%v)", c.to, what, err)
			h.dup = later + time.Nanosecond
		}
		finish(err, h.ctxErr(nil))
		h.dup = 0
	})
}

// ctxErr is the call context's error: cancelled once the incarnation
// ended (its controller process included), else err.
func (h *volHost) ctxErr(err error) error {
	if !h.live() {
		return context.Canceled
	}
	return err
}

// desiredNodes is the desired-state writer's SetDesiredNodes.
func desiredNodes(v cloud.VolumeID, mode cloud.AccessMode, rev uint64, nodes []cloud.NodeName) *messages.SetDesiredNodes {
	m := &messages.SetDesiredNodes{VolumeId: string(v), AccessMode: messages.AccessMode_ACCESS_MODE_EXCLUSIVE, Revision: rev}
	if mode == cloud.MultiNode {
		m.AccessMode = messages.AccessMode_ACCESS_MODE_MULTI_NODE
	}
	for _, n := range nodes {
		m.Nodes = append(m.Nodes, string(n))
	}
	return m
}
