package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
	"github.com/tether/tether/node/reconciler"
)

func (a *agentActor) run(ctx actor.Context, eff reconciler.Effect) {
	switch f := eff.(type) {
	case reconciler.ReportInUse:
		a.cfg.Guard.SendFrom(a.cfg.Controller(a.cfg.Node), inUseMsg(a.cfg.Node, f.Volumes, f.Seq), a.self)
	case reconciler.Stage:
		parent, timeout := a.ctx, a.cfg.OpTimeout
		a.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpStage}, func() error {
			// Made here, so that a call Calls refuses leaves no timer
			// behind.
			c, cancel := withTimeout(parent, timeout)
			defer cancel()
			return a.stage(c, f)
		})
	case reconciler.Unstage:
		a.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpUnstage}, func() error { return a.unstage(f.Volume) })
	case reconciler.Publish:
		a.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpPublish, UID: f.UID}, func() error { return a.publish(f) })
	case reconciler.Unpublish:
		a.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpUnpublish, UID: f.UID}, func() error { return a.unpublish(f) })
	case reconciler.Record:
		a.record(f)
	case reconciler.WakeAt:
		if a.wake != nil && !a.wakeAt.After(f.At) {
			return
		}
		if a.wake != nil {
			a.wake.Stop()
		}
		self, g := a.self, a.cfg.Guard
		a.wakeAt = f.At
		a.wake = clock.At(a.cfg.Clock, f.At, func() { g.Send(self, &messages.Wake{}) })
	default:
		panic(fmt.Sprintf("node: unknown agent effect %T", eff))
	}
}

// do runs one mount operation in a goroutine of its own (through Calls)
// and reports its result whenever the call returns. Its deadline is the
// core's (OpTimeout on Clock). A stage's context bounds what can be
// cancelled (the device lookup), never the mount(2) itself; the other
// calls have nothing to cancel and get no context: each cost a timer that
// outlived its call (a stopped timer may stay in the runtime's heap, with
// its context, until its deadline is due) and a place among the
// incarnation context's children (a map keeps the room of its most
// entries).
func (a *agentActor) do(vol cloud.VolumeID, r reconciler.Running, f func() error) {
	r.Since = a.cfg.Clock.Now()
	if a.cfg.OnCall != nil {
		a.cfg.OnCall(a.cfg.Node, vol, r)
	}
	a.cfg.Calls.start(vol, r, f)
}

func (a *agentActor) stage(c context.Context, f reconciler.Stage) error {
	target, err := a.layout.GlobalMount(a.cfg.Plugin, string(f.Volume))
	if err != nil {
		return err
	}
	source, release, err := a.cfg.Devices.Source(c, f.Volume, f.Device)
	if err != nil {
		return fmt.Errorf("device %s of volume %s: %w", f.Device, f.Volume, err)
	}
	defer release() // held until the stage returned: see Devices
	return a.mounter.Stage(source, target)
}

func (a *agentActor) unstage(vol cloud.VolumeID) error {
	target, err := a.layout.GlobalMount(a.cfg.Plugin, string(vol))
	if err != nil {
		return err
	}
	// plugins/<plugin>/mounts/ stays, empty or not: the next stage finds
	// it (the mounter holds it open), and Scan finds nothing in it.
	return a.mounter.Unstage(target)
}

func (a *agentActor) publish(f reconciler.Publish) error {
	staged, err := a.layout.GlobalMount(a.cfg.Plugin, string(f.Volume))
	if err != nil {
		return err
	}
	target, err := a.layout.PodVolume(f.UID, a.cfg.Plugin, string(f.Volume))
	if err != nil {
		return err
	}
	return a.mounter.Publish(staged, target, f.ReadOnly)
}

func (a *agentActor) unpublish(f reconciler.Unpublish) error {
	target, err := a.layout.PodVolume(f.UID, a.cfg.Plugin, string(f.Volume))
	if err != nil {
		return err
	}
	// Unpublish removes the workload's directories once empty; pods/
	// stays.
	return a.mounter.Unpublish(target)
}

func (a *agentActor) record(f reconciler.Record) {
	obj := events.Ref{Kind: events.KindWorkload, Name: f.Workload, UID: a.uids.workload(f.Workload)}
	if f.Workload == "" {
		obj = events.Ref{Kind: events.KindNode, Name: string(a.cfg.Node), UID: a.uids.node}
	}
	if a.cfg.Events != nil {
		a.cfg.Events.Record(events.Event{Time: a.cfg.Clock.Now(), Object: obj, Type: f.Type, Node: string(a.cfg.Node), Warning: f.Warning, Message: f.Message})
	}
	l := a.cfg.Log.WithFields(map[string]any{"node": a.cfg.Node, "event": f.Type, "workload": f.Workload, "volume": f.Volume})
	if f.Warning {
		l.Warn(f.Message)
	} else {
		l.Info(f.Message)
	}
}

// startScan reads the data directory back in a goroutine, giving up on a
// mount whose state does not come within OpTimeout (a hung mount), and
// sends the result to this incarnation.
func (a *agentActor) startScan() {
	l, m, self, g, parent, timeout := a.layout, a.mounter, a.self, a.cfg.Guard, a.ctx, a.cfg.OpTimeout
	go func() {
		c, cancel := withTimeout(parent, timeout)
		defer cancel()
		found, err := mount.ScanContext(c, l, m)
		if parent.Err() == nil { // else this incarnation is gone
			g.Send(self, scanned{by: a, found: found, err: err})
		}
	}()
}

// onScanned starts the core from the disk scan, then steps the results
// held back meanwhile.
func (a *agentActor) onScanned(ctx actor.Context, m scanned) {
	if m.by != a {
		return // an earlier incarnation's
	}
	if m.err != nil {
		// Without knowing what is mounted the agent must not act: fail and
		// let the supervisor retry with backoff.
		panic(fmt.Sprintf("agent %s: reading %s back: %v", a.cfg.Node, a.layout.Root(), m.err))
	}
	a.step(ctx, a.restoredFrom(m.found))
	a.restored, a.running = true, nil // the core has them now
	held := a.held
	a.held = nil
	for _, r := range held {
		a.onMountFinished(ctx, r)
	}
}

// restoredFrom converts the scan into a Restored event, with the calls of
// earlier incarnations still running. Entries of another plugin are left
// alone.
func (a *agentActor) restoredFrom(found mount.Found) reconciler.Restored {
	r := reconciler.Restored{Stages: map[cloud.VolumeID]reconciler.Found{}, Publishes: map[reconciler.PubKey]reconciler.Found{}, Running: a.running}
	for _, p := range found.Invalid {
		a.cfg.Log.WithField("node", a.cfg.Node).Warnf("ignoring %s: not a valid tether path", p)
	}
	for _, e := range found.Entries {
		if e.Plugin != a.cfg.Plugin {
			continue
		}
		f := reconciler.Found{Mounted: e.State == mount.Mounted, Hung: e.State == mount.Unknown}
		if e.Kind == mount.KindStage {
			r.Stages[cloud.VolumeID(e.Volume)] = f
		} else {
			r.Publishes[reconciler.PubKey{UID: e.UID, Volume: cloud.VolumeID(e.Volume)}] = f
		}
	}
	return r
}

func (a *agentActor) status() *messages.AgentStatus {
	out := &messages.AgentStatus{Node: string(a.cfg.Node)}
	if a.core == nil {
		return out
	}
	st := a.core.Status()
	out.Ready = st.Ready
	for _, v := range st.InUse {
		out.VolumesInUse = append(out.VolumesInUse, string(v))
	}
	for _, m := range st.Mounts {
		out.Mounts = append(out.Mounts, &messages.AgentMount{VolumeId: string(m.Volume), WorkloadUid: m.UID, State: m.State.String()})
	}
	return out
}

func inUseMsg(node cloud.NodeName, vols []cloud.VolumeID, seq uint64) *messages.ReportVolumesInUse {
	msg := &messages.ReportVolumesInUse{Node: string(node), Seq: seq}
	for _, v := range vols {
		msg.VolumeIds = append(msg.VolumeIds, string(v))
	}
	return msg
}

// validWorkloads converts the desired state, refusing (with a FailedMount
// event) every workload whose UID or volume IDs are not valid names: they
// would become paths, and nothing of them is reported or mounted.
func (a *agentActor) desired(m *messages.NodeWorkloads) reconciler.DesiredChanged {
	uids := make(map[string]string, len(m.Workloads))
	for _, w := range m.Workloads {
		uids[w.Uid] = w.ObjectUid
	}
	a.uids.update(m.Revision, m.NodeObjectUid, uids)
	return reconciler.DesiredChanged{Workloads: a.validWorkloads(m), Revision: m.Revision}
}

func (a *agentActor) validWorkloads(m *messages.NodeWorkloads) []reconciler.Workload {
	out := make([]reconciler.Workload, 0, len(m.Workloads))
	for _, w := range m.Workloads {
		aw := reconciler.Workload{UID: w.Uid}
		err := layout.ValidName(layout.KindWorkload, w.Uid)
		for _, u := range w.Volumes {
			if err == nil {
				err = layout.ValidName(layout.KindVolume, u.VolumeId)
			}
			aw.Volumes = append(aw.Volumes, reconciler.Use{Volume: cloud.VolumeID(u.VolumeId), ReadOnly: u.ReadOnly})
		}
		if err != nil {
			a.record(reconciler.Record{Type: reconciler.EventFailedMount, Workload: w.Uid, Warning: true, Message: "refusing workload: " + err.Error()})
			continue
		}
		out = append(out, aw)
	}
	return out
}

func statusFromProto(m *messages.NodeStatusUpdated) reconciler.StatusChanged {
	s := reconciler.StatusChanged{Attached: make(map[cloud.VolumeID]string, len(m.VolumesAttached)), InUse: make(map[cloud.VolumeID]bool, len(m.VolumesInUse)), InUseSeq: m.InUseSeq}
	for _, v := range m.VolumesAttached {
		s.Attached[cloud.VolumeID(v.VolumeId)] = v.DevicePath
	}
	for _, v := range m.VolumesInUse {
		s.InUse[cloud.VolumeID(v)] = true
	}
	return s
}

// withTimeout is context.WithTimeout where d <= 0 means no deadline.
func withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(parent)
	}
	return context.WithTimeout(parent, d)
}
