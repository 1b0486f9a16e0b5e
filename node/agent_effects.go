package node

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

func (a *agentActor) run(ctx actor.Context, eff agent.Effect) {
	switch f := eff.(type) {
	case agent.ReportInUse:
		a.cfg.Guard.Send(a.cfg.Controller(a.cfg.Node), inUseMsg(a.cfg.Node, f.Volumes, f.Seq))
	case agent.Stage:
		a.do(f.Volume, f.Op, func(c context.Context) error { return a.stage(c, f) })
	case agent.Unstage:
		a.do(f.Volume, f.Op, func(context.Context) error { return a.unstage(f.Volume) })
	case agent.Publish:
		a.do(f.Volume, f.Op, func(context.Context) error { return a.publish(f) })
	case agent.Unpublish:
		a.do(f.Volume, f.Op, func(context.Context) error { return a.unpublish(f) })
	case agent.Record:
		a.record(f)
	case agent.WakeAt:
		if a.wake != nil && !a.wakeAt.After(f.At) {
			return
		}
		if a.wake != nil {
			a.wake.Stop()
		}
		self, g := a.self, a.cfg.Guard
		a.wakeAt = f.At
		a.wake = a.cfg.Clock.AfterFunc(f.At.Sub(a.cfg.Clock.Now()), func() { g.Send(self, &messages.Wake{}) })
	default:
		panic(fmt.Sprintf("node: unknown agent effect %T", eff))
	}
}

// do runs one mount operation in a goroutine and reports its result.
func (a *agentActor) do(vol cloud.VolumeID, op uint64, f func(context.Context) error) {
	a.ops.Add(1)
	self, parent, g := a.self, a.ctx, a.cfg.Guard
	go func() {
		defer a.ops.Done()
		c, cancel := context.WithTimeout(parent, a.cfg.OpTimeout)
		defer cancel()
		res := &messages.MountFinished{VolumeId: string(vol), Op: op}
		if err := f(c); err != nil {
			res.Error = err.Error()
		}
		g.Send(self, res)
	}()
}

func (a *agentActor) stage(c context.Context, f agent.Stage) error {
	target, err := a.layout.GlobalMount(a.cfg.Plugin, string(f.Volume))
	if err != nil {
		return err
	}
	source, err := a.cfg.Devices.Source(c, f.Volume, f.Device)
	if err != nil {
		return fmt.Errorf("device %s of volume %s: %w", f.Device, f.Volume, err)
	}
	return a.mounter.Stage(source, target)
}

func (a *agentActor) unstage(vol cloud.VolumeID) error {
	target, err := a.layout.GlobalMount(a.cfg.Plugin, string(vol))
	if err != nil {
		return err
	}
	if err := a.mounter.Unstage(target); err != nil {
		return err
	}
	return mount.CleanEmptyParents(a.layout, target, a.layout.Root())
}

func (a *agentActor) publish(f agent.Publish) error {
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

func (a *agentActor) unpublish(f agent.Unpublish) error {
	target, err := a.layout.PodVolume(f.UID, a.cfg.Plugin, string(f.Volume))
	if err != nil {
		return err
	}
	if err := a.mounter.Unpublish(target); err != nil {
		return err
	}
	return mount.CleanEmptyParents(a.layout, target, filepath.Join(a.layout.Root(), "pods"))
}

func (a *agentActor) record(f agent.Record) {
	obj := events.Ref{Kind: events.KindWorkload, Name: f.Workload}
	if f.Workload == "" {
		obj = events.Ref{Kind: events.KindNode, Name: string(a.cfg.Node)}
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

// scan reads the data directory back into a Restored event. Entries of
// another plugin are left alone.
func (a *agentActor) scan() (agent.Restored, error) {
	r := agent.Restored{Stages: map[cloud.VolumeID]agent.Found{}, Publishes: map[agent.PubKey]agent.Found{}}
	found, err := mount.Scan(a.layout, a.mounter)
	if err != nil {
		return r, err
	}
	for _, p := range found.Invalid {
		a.cfg.Log.WithField("node", a.cfg.Node).Warnf("ignoring %s: not a valid tether path", p)
	}
	for _, e := range found.Entries {
		if e.Plugin != a.cfg.Plugin {
			continue
		}
		f := agent.Found{Mounted: e.State == mount.Mounted}
		if e.Kind == mount.KindStage {
			r.Stages[cloud.VolumeID(e.Volume)] = f
		} else {
			r.Publishes[agent.PubKey{UID: e.UID, Volume: cloud.VolumeID(e.Volume)}] = f
		}
	}
	return r, nil
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
func (a *agentActor) desired(m *messages.NodeWorkloads) agent.DesiredChanged {
	return agent.DesiredChanged{Workloads: a.validWorkloads(m), Revision: m.Revision}
}

func (a *agentActor) validWorkloads(m *messages.NodeWorkloads) []agent.Workload {
	out := make([]agent.Workload, 0, len(m.Workloads))
	for _, w := range m.Workloads {
		aw := agent.Workload{UID: w.Uid}
		err := layout.ValidName(layout.KindWorkload, w.Uid)
		for _, u := range w.Volumes {
			if err == nil {
				err = layout.ValidName(layout.KindVolume, u.VolumeId)
			}
			aw.Volumes = append(aw.Volumes, agent.Use{Volume: cloud.VolumeID(u.VolumeId), ReadOnly: u.ReadOnly})
		}
		if err != nil {
			a.record(agent.Record{Type: agent.EventFailedMount, Workload: w.Uid, Warning: true, Message: "refusing workload: " + err.Error()})
			continue
		}
		out = append(out, aw)
	}
	return out
}

func statusFromProto(m *messages.NodeStatusUpdated) agent.StatusChanged {
	s := agent.StatusChanged{Attached: map[cloud.VolumeID]string{}, InUse: map[cloud.VolumeID]bool{}, InUseSeq: m.InUseSeq}
	for _, v := range m.VolumesAttached {
		s.Attached[cloud.VolumeID(v.VolumeId)] = v.DevicePath
	}
	for _, v := range m.VolumesInUse {
		s.InUse[cloud.VolumeID(v)] = true
	}
	return s
}
