package simulation

import (
	"github.com/tether/tether/actors/controller"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
)

// desiredMsg is SetDesiredNodes: the volume's desired nodes as of a store
// revision.
type desiredMsg struct {
	Rev   uint64
	Mode  cloud.AccessMode
	Nodes []cloud.NodeName
}

// restoredMsg is VolumeRestored: the answer of the start-up verify.
type restoredMsg struct {
	Inc      uint64
	Attached map[cloud.NodeName]bool
	AsOf     time.Time
	Failed   bool
}

// volSim mimics actors/controller's volume actor.
type volSim struct {
	w         *world
	id        cloud.VolumeID
	alive     bool
	inc       uint64
	core      *volume.Volume
	rev       uint64
	restoring bool
	queued    []any
	base      volume.Restored
	timer     *timer
}

func (v *volSim) incarnation() uint64 { return v.inc }
func (v *volSim) isAlive() bool       { return v.alive }
func (v *volSim) addr() addr          { return volAddr(v.id) }

// start is the shell's onStarted: a new core, the store snapshot, then the
// targeted verify; until it answers, messages are queued.
func (v *volSim) start() {
	w := v.w
	v.inc++
	v.alive, v.timer = true, &timer{}
	cfg := w.cfg.Volume
	cfg.CloudTimeout = w.cfg.CloudTimeout
	cfg.Rand = w.plan.site("jitter " + v.addr().String()).float
	v.core = volume.New(v.id, cfg, w.incarnationBase(v.addr()))
	v.restoring, v.queued = true, nil
	base, candidates := v.readStore()
	v.base = base
	w.tracef("%s starts (incarnation %d): desired %v listed %v detaching %v", v.addr(), v.inc, base.Desired, base.Listed, base.Detaching)
	w.verify(v.id, candidates, true)
}

func (v *volSim) kill() {
	v.alive, v.core, v.queued, v.base = false, nil, nil, volume.Restored{}
}

// readStore is the shell's readStore: the same code (controller.ReadVolume),
// with the test hook applied to what the nodes report.
func (v *volSim) readStore() (volume.Restored, []cloud.NodeName) {
	snap, _ := controller.ReadVolume(v.w.st, v.id)
	v.rev = snap.Revision
	for n, info := range snap.Restored.Nodes {
		snap.Restored.Nodes[n] = v.w.hookInfo(info)
	}
	return snap.Restored, snap.Candidates
}

func (v *volSim) receive(_ addr, msg any) {
	if m, ok := msg.(restoredMsg); ok {
		v.onRestored(m)
		return
	}
	if v.restoring {
		v.queued = append(v.queued, msg)
		return
	}
	v.handle(msg)
}

func (v *volSim) onRestored(m restoredMsg) {
	if !v.restoring || m.Inc != v.inc {
		return // an earlier incarnation's verify
	}
	v.restoring = false
	r := v.base
	r.AsOf = m.AsOf
	if !m.Failed {
		r.Truth = m.Attached
	}
	v.base = volume.Restored{}
	v.step(r)
	queued := v.queued
	v.queued = nil
	for _, q := range queued {
		v.handle(q)
	}
}

func (v *volSim) handle(msg any) {
	var ev volume.Event
	switch m := msg.(type) {
	case desiredMsg:
		if m.Rev <= v.rev {
			return // older than (or as old as) what this incarnation knows
		}
		v.rev = m.Rev
		ev = volume.DesiredChanged{Mode: m.Mode, Desired: m.Nodes}
	case wakeMsg:
		ev = volume.Tick{}
	case volume.NodeChanged:
		m.Info = v.w.hookInfo(m.Info)
		ev = m
	case volume.Event:
		ev = m
	default:
		return
	}
	v.step(ev)
}

func (v *volSim) step(ev volume.Event) {
	for _, eff := range v.core.Step(v.w.now, ev) {
		v.run(eff)
	}
}

// run is the shell's run: messages to node actors, cloud calls started
// asynchronously, events, timers.
func (v *volSim) run(eff volume.Effect) {
	w := v.w
	switch f := eff.(type) {
	case volume.CallAttach:
		w.callAttach(v.id, f)
	case volume.CallDetach:
		w.callDetach(v.id, f)
	case volume.PrepareDetach:
		force := f.Force
		if w.cfg.BreakI2 && force == "" {
			force = "broken-by-test-hook"
		}
		w.send(v.addr(), nodeAddr(f.Node), nodestatus.DetachRequested{Volume: v.id, Op: f.Op, Force: force})
	case volume.ReportAttached:
		w.send(v.addr(), nodeAddr(f.Node), nodestatus.VolumeAttached{Volume: v.id, DevicePath: f.DevicePath})
	case volume.ReportDetached:
		w.send(v.addr(), nodeAddr(f.Node), nodestatus.VolumeDetached{Volume: v.id})
	case volume.VerifyNode:
		w.verify(v.id, []cloud.NodeName{f.Node}, false)
	case volume.Record:
		w.tracef("%s event %s node=%s: %s", v.addr(), f.Type, f.Node, f.Message)
	case volume.WakeAt:
		w.wakeAt(v.timer, v.addr(), f.At)
	}
}

// hookInfo is the BreakI2 hook: the volume is told no node uses it.
func (w *world) hookInfo(i volume.NodeInfo) volume.NodeInfo {
	if w.cfg.BreakI2 {
		i.InUse = false
	}
	return i
}
