package simulation

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/reconciler"
)

// beatMsg is the agent's heartbeat timer.
type beatMsg struct{}

// agentSim is a node's agent actor: the production runner (agent.Runner)
// of its live incarnation, hosted by this scheduler (agentHost), over the
// node's simulated disk (diskMounts) and a Calls whose calls the
// scheduler runs (mountCalls).
type agentSim struct {
	w     *world
	node  cloud.NodeName
	alive bool
	inc   uint64
	r     *agent.Runner
	timer *timer
	// calls outlives the incarnations, as the agent's Calls does; a new
	// one comes with a new machine (its calls died with the old one).
	calls *agent.Calls
	// seen is the last node status this incarnation received (what it
	// holds); reported its last VolumesInUse report and addedAt the
	// number of the report that (last) added each volume to it (I3).
	seen     reconciler.StatusChanged
	desired  reconciler.DesiredChanged // the last workloads received (I5 notes)
	reported []cloud.VolumeID
	lastSeq  uint64 // the core's number of its last report
	addedAt  map[cloud.VolumeID]uint64
}

func (a *agentSim) incarnation() uint64 { return a.inc }
func (a *agentSim) isAlive() bool       { return a.alive }
func (a *agentSim) addr() addr          { return agentAddr(a.node) }

// start is the shell's onStarted: a new core and runner, the disk scan
// (with the calls still running), then the hello. An agent whose machine
// is down starts with the machine.
func (a *agentSim) start() {
	w := a.w
	if a.alive || !w.machineUp(a.node) {
		return
	}
	a.inc++
	a.alive, a.timer = true, &timer{}
	a.seen, a.desired, a.reported, a.addedAt = reconciler.StatusChanged{}, reconciler.DesiredChanged{}, nil, map[cloud.VolumeID]uint64{}
	if a.calls == nil {
		a.calls = a.mountCalls()
	}
	cfg := w.cfg.Agent
	cfg.Rand = w.plan.site("jitter " + a.addr().String()).float
	// As the shell: numbers from an epoch that grows with every start.
	a.r = agent.NewRunner(agent.RunnerConfig{Node: a.node, Host: &agentHost{a: a, inc: a.inc}, Mounts: diskMounts{a},
		Calls: a.calls, Core: reconciler.New(cfg, a.inc<<32), OpTimeout: cfg.OpTimeout, Epoch: a.inc,
		BreakStaleStatus: w.cfg.Break == "I3-stale"})
	restored := w.disks[a.node].scan()
	restored.Running = a.r.Running()
	w.tracef("%s starts (incarnation %d): disk %v, calls running %v", a.addr(), a.inc, w.disks[a.node], sortedKeys(restored.Running))
	a.r.Scanned(restored)
	a.r.Heartbeat() // the hello
	a.nextBeat()
}

// kill ends the incarnation (the actor restarts); its mount calls go on,
// and their results go to the next incarnation (Calls).
func (a *agentSim) kill() {
	if a.r != nil {
		a.r.Detach()
	}
	a.alive, a.r = false, nil
}

// crash ends the incarnation with its machine: nothing survives in
// memory, and the mount calls running die with it.
func (a *agentSim) crash() {
	a.kill()
	a.calls = nil
}

// nextBeat is the shell's beater: every HeartbeatEvery the heartbeat goes
// to the node actor, and the runner's part of it runs in the mailbox.
func (a *agentSim) nextBeat() {
	inc := a.inc
	a.w.after(a.w.cfg.HeartbeatEvery, func() {
		if a.alive && a.inc == inc {
			a.receive(a.addr(), beatMsg{})
		}
	})
}

func (a *agentSim) receive(_ addr, msg any) {
	switch m := msg.(type) {
	case beatMsg:
		(&agentHost{a: a, inc: a.inc}).SendController(a.r.HeartbeatMsg())
		a.r.Heartbeat()
		a.nextBeat()
	case wakeMsg:
		a.r.Handle(&messages.Wake{})
	case *messages.NodeStatusUpdated:
		a.seen = statusOf(m)
		a.r.Handle(statusMsg(a.node, a.hookStatus(a.seen)))
	case reconciler.DesiredChanged:
		a.desired = m
		a.r.Handle(workloadsMsg(a.node, m))
	case *messages.MountFinished:
		a.r.Handle(m)
	}
}

// hookStatus is what the runner is given of m: m itself, unless the
// "I3-wiring" break is on (with report leaving out what the disk does not
// hold yet): as if the controller had heard the agent's last report and
// listed every attached volume in use.
func (a *agentSim) hookStatus(m reconciler.StatusChanged) reconciler.StatusChanged {
	switch a.w.cfg.Break {
	case "I3-wiring":
		return ackAll(m, a.lastSeq)
	}
	return m
}

// ackAll is the "I3-wiring" break: the status as the core is told it, as
// if the controller had heard the agent's last report (seq) and listed
// every attached volume in use.
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

// agentHost is the Host of one incarnation of an agent.
type agentHost struct {
	a   *agentSim
	inc uint64
}

func (h *agentHost) live() bool     { return h.a.alive && h.a.inc == h.inc }
func (h *agentHost) Now() time.Time { return h.a.w.now }

// SendController is the link to the node actor (as the node actor's shell
// reads the messages).
func (h *agentHost) SendController(msg any) {
	a, w := h.a, h.a.w
	if !h.live() {
		return
	}
	switch m := msg.(type) {
	case *messages.Heartbeat:
		w.sendLink(a.addr(), nodeAddr(a.node), a.node, m)
	case *messages.AgentStarted:
		w.sendLink(a.addr(), nodeAddr(a.node), a.node, agentStarted{})
	case *messages.ReportVolumesInUse:
		vols := make([]cloud.VolumeID, 0, len(m.VolumeIds))
		for _, v := range m.VolumeIds {
			vols = append(vols, cloud.VolumeID(v))
		}
		a.report(vols, m.Seq)
	default:
		panic("simulation: the agent sent an unknown message " + describe(msg))
	}
}

// SendSelf: a mount call's result, to this incarnation.
func (h *agentHost) SendSelf(msg any) {
	if h.live() {
		h.a.w.post(h.a.w.now, addr{kDisk, string(h.a.node)}, h.a.addr(), msg)
	}
}

func (h *agentHost) WakeAt(at time.Time) {
	if h.live() {
		h.a.w.wakeAt(h.a.timer, h.a.addr(), at)
	}
}

func (h *agentHost) Record(ev events.Event, vol cloud.VolumeID) {
	h.a.w.tracef("%s event %s %s %s: %s", h.a.addr(), ev.Type, ev.Object.Name, vol, ev.Message)
}

// diskMounts carries the mount operations out on the node's simulated
// disk (execOp).
type diskMounts struct{ a *agentSim }

func (d diskMounts) exec(op *diskOp) error {
	if err := d.a.w.execOp(d.a, op, true); err != "" {
		return errors.New(err)
	}
	return nil
}

func (d diskMounts) Stage(_ context.Context, vol cloud.VolumeID, device string) error {
	return d.exec(&diskOp{kind: opStage, vol: vol, dev: device})
}

func (d diskMounts) Unstage(vol cloud.VolumeID) error {
	return d.exec(&diskOp{kind: opUnstage, vol: vol})
}

func (d diskMounts) Publish(vol cloud.VolumeID, uid string, _ bool) error {
	return d.exec(&diskOp{kind: opPublish, vol: vol, uid: uid})
}

func (d diskMounts) Unpublish(vol cloud.VolumeID, uid string) error {
	return d.exec(&diskOp{kind: opUnpublish, vol: vol, uid: uid})
}
