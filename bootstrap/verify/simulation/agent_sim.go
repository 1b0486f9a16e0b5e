package simulation

import (
	"maps"
	"slices"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/reconciler"
)

// beatMsg is the agent's heartbeat timer.
type beatMsg struct{}

// agentSim mimics node's agent actor, over the node's simulated disk.
type agentSim struct {
	w     *world
	node  cloud.NodeName
	alive bool
	inc   uint64
	core  *reconciler.Agent
	timer *timer
	// seen is the last node status this incarnation received; reported
	// its last VolumesInUse report and addedAt the number of the report
	// that (last) added each volume to it (I3).
	seen     reconciler.StatusChanged
	desired  reconciler.DesiredChanged // the last workloads received (I5 notes)
	reported []cloud.VolumeID
	lastSeq  uint64 // the core's number of its last report
	addedAt  map[cloud.VolumeID]uint64
	// ops in flight, by volume (the core runs one per volume).
	ops map[cloud.VolumeID]*diskOp
	// queued: results of a killed incarnation's operations, still in the
	// mailbox, which survives a restart: the next incarnation gets them
	// after it started.
	queued []reconciler.OpDone
	beats  int
}

func (a *agentSim) incarnation() uint64 { return a.inc }
func (a *agentSim) isAlive() bool       { return a.alive }
func (a *agentSim) addr() addr          { return agentAddr(a.node) }

// start is the shell's onStarted: scan the disk, then say hello. An agent
// whose machine is down starts with the machine.
func (a *agentSim) start() {
	w := a.w
	if a.alive || !w.machineUp(a.node) {
		return
	}
	a.inc++
	a.alive, a.timer, a.ops = true, &timer{}, map[cloud.VolumeID]*diskOp{}
	a.seen, a.desired, a.reported, a.addedAt = reconciler.StatusChanged{}, reconciler.DesiredChanged{}, nil, map[cloud.VolumeID]uint64{}
	cfg := w.cfg.Agent
	cfg.Rand = w.plan.site("jitter " + a.addr().String()).float
	// As the shell: numbers from an epoch that grows with every start.
	a.core = reconciler.New(cfg, a.inc<<32)
	restored := w.disks[a.node].scan()
	w.tracef("%s starts (incarnation %d): disk %v", a.addr(), a.inc, w.disks[a.node])
	a.step(restored)
	a.heartbeat()
	for _, res := range a.queued {
		w.post(w.now, addr{kDisk, string(a.node)}, a.addr(), res)
	}
	a.queued = nil
}

// kill ends the incarnation (the actor restarts); its mount operations in
// flight complete, stop half-done or never happen, as the plan draws, and
// their results wait in the mailbox for the next incarnation.
func (a *agentSim) kill() {
	w := a.w
	s := w.plan.site("kill " + a.addr().String())
	for _, v := range sortedKeys(a.ops) {
		op := a.ops[v]
		res := reconciler.OpDone{Volume: v, Op: op.op, Err: "context canceled"}
		switch s.index(3) {
		case 0:
			w.tracef("%s dies before %s of %s ran", a.addr(), op.kind, v)
		case 1:
			res.Err = w.execOp(a, op, false)
			w.tracef("%s dies after %s of %s ran: %q", a.addr(), op.kind, v, res.Err)
		default:
			w.tracef("%s dies during %s of %s: half-done", a.addr(), op.kind, v)
			w.disks[a.node].halfDone(op)
		}
		a.queued = append(a.queued, res)
	}
	a.alive, a.core, a.ops = false, nil, nil
}

// crash ends the incarnation with its machine: nothing survives in memory.
func (a *agentSim) crash() {
	a.kill()
	a.queued = nil
}

// heartbeat is the shell's onHeartbeat: alive; until the agent knows its
// state it says hello again, afterwards it repeats its VolumesInUse.
func (a *agentSim) heartbeat() {
	w := a.w
	na := nodeAddr(a.node)
	w.sendLink(a.addr(), na, a.node, nodestatus.HeartbeatReceived{})
	a.beats++
	st := a.core.Status()
	if !st.Ready || a.beats%6 == 0 { // as the shell's resyncEvery
		w.sendLink(a.addr(), na, a.node, agentStarted{})
	}
	if st.Ready {
		a.report(st.InUse, st.Seq)
	}
	inc := a.inc
	w.after(w.cfg.HeartbeatEvery, func() {
		if a.alive && a.inc == inc {
			a.receive(a.addr(), beatMsg{})
		}
	})
}

func (a *agentSim) receive(_ addr, msg any) {
	switch m := msg.(type) {
	case beatMsg:
		a.heartbeat()
	case wakeMsg:
		a.step(reconciler.Tick{})
	case reconciler.StatusChanged:
		a.seen = m
		if a.w.cfg.Break == "I3-wiring" {
			m = ackAll(m, a.lastSeq)
		}
		a.step(m)
	case reconciler.DesiredChanged:
		a.desired = m
		a.step(m)
	case reconciler.Event:
		a.step(m)
	}
}

func (a *agentSim) step(ev reconciler.Event) {
	for _, eff := range a.core.Step(a.w.now, ev) {
		a.run(eff)
	}
}

func (a *agentSim) run(eff reconciler.Effect) {
	w := a.w
	switch f := eff.(type) {
	case reconciler.ReportInUse:
		a.report(f.Volumes, f.Seq)
	case reconciler.Stage:
		a.startOp(&diskOp{kind: opStage, vol: f.Volume, dev: f.Device, op: f.Op})
	case reconciler.Unstage:
		a.startOp(&diskOp{kind: opUnstage, vol: f.Volume, op: f.Op})
	case reconciler.Publish:
		a.startOp(&diskOp{kind: opPublish, vol: f.Volume, uid: f.UID, op: f.Op})
	case reconciler.Unpublish:
		a.startOp(&diskOp{kind: opUnpublish, vol: f.Volume, uid: f.UID, op: f.Op})
	case reconciler.Record:
		w.tracef("%s event %s %s %s: %s", a.addr(), f.Type, f.Workload, f.Volume, f.Message)
	case reconciler.WakeAt:
		w.wakeAt(a.timer, a.addr(), f.At)
	}
}

// report sends VolumesInUse with the agent's number seq, and the
// simulation's own number of the report (which no core sees: it lets the
// checker know which reports the node heard).
func (a *agentSim) report(vols []cloud.VolumeID, seq uint64) {
	w := a.w
	if w.cfg.Break == "I3-wiring" {
		vols = w.disks[a.node].mountedOf(vols)
	}
	w.reports++
	for _, v := range vols {
		if !slices.Contains(a.reported, v) {
			a.addedAt[v] = w.reports
		}
	}
	a.reported, a.lastSeq = slices.Clone(vols), seq
	w.sendLink(a.addr(), nodeAddr(a.node), a.node, inUseMsg{Seq: seq, Num: w.reports, Volumes: slices.Clone(vols)})
}

// startOp runs a mount operation after a short delay and reports its
// result to this incarnation only (a restarted agent's disk scan accounts
// for what its predecessor did).
func (a *agentSim) startOp(op *diskOp) {
	w := a.w
	if op.kind == opStage || op.kind == opPublish {
		w.chk.decided(a, op)
	}
	a.ops[op.vol] = op
	inc := a.inc
	s := w.plan.site("ops " + string(a.node))
	run, answer := s.uniform(5*time.Millisecond, 300*time.Millisecond), s.uniform(0, 2*time.Millisecond)
	w.after(run, func() {
		if !a.alive || a.inc != inc || a.ops[op.vol] != op {
			return
		}
		delete(a.ops, op.vol)
		res := reconciler.OpDone{Volume: op.vol, Op: op.op, Err: w.execOp(a, op, true)}
		w.post(w.now.Add(answer), addr{kDisk, string(a.node)}, a.addr(), res)
	})
}

// ackAll is the "I3-wiring" break (with report leaving out what the disk
// does not hold yet): the status as the core is told it, as if the
// controller had heard the agent's last report (seq) and listed every
// attached volume in use.
func ackAll(m reconciler.StatusChanged, seq uint64) reconciler.StatusChanged {
	inUse := maps.Clone(m.InUse)
	if inUse == nil {
		inUse = map[cloud.VolumeID]bool{}
	}
	for v := range m.Attached {
		inUse[v] = true
	}
	return reconciler.StatusChanged{Attached: m.Attached, InUse: inUse, InUseSeq: max(m.InUseSeq, seq)}
}
