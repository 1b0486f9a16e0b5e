package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
	"github.com/tether/tether/node/reconciler"
)

func (r *Runner) run(eff reconciler.Effect) {
	h := r.cfg.Host
	switch f := eff.(type) {
	case reconciler.ReportInUse:
		h.SendController(inUseMsg(r.cfg.Node, f.Volumes, f.Seq))
	case reconciler.Stage:
		m, parent, timeout := r.cfg.Mounts, r.ctx(), r.cfg.OpTimeout
		r.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpStage}, func() error {
			// Made here, so that a call Calls refuses leaves no timer
			// behind.
			c, cancel := withTimeout(parent, timeout)
			defer cancel()
			return m.Stage(c, f.Volume, f.Device)
		})
	case reconciler.Unstage:
		r.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpUnstage}, func() error { return r.cfg.Mounts.Unstage(f.Volume) })
	case reconciler.Publish:
		r.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpPublish, UID: f.UID}, func() error { return r.cfg.Mounts.Publish(f.Volume, f.UID, f.ReadOnly) })
	case reconciler.Unpublish:
		r.do(f.Volume, reconciler.Running{Op: f.Op, Kind: reconciler.OpUnpublish, UID: f.UID}, func() error { return r.cfg.Mounts.Unpublish(f.Volume, f.UID) })
	case reconciler.Record:
		r.record(f)
	case reconciler.WakeAt:
		if r.waking && !r.wakeAt.After(f.At) {
			return
		}
		r.waking, r.wakeAt = true, f.At
		h.WakeAt(f.At)
	default:
		panic(fmt.Sprintf("node: unknown agent effect %T", eff))
	}
}

// do runs one mount operation in a goroutine of its own (through Calls)
// and reports its result whenever the call returns. Its deadline is the
// core's (OpTimeout on the host's clock). A stage's context bounds what
// can be cancelled (the device lookup), never the mount(2) itself; the
// other calls have nothing to cancel and get no context: each cost a
// timer that outlived its call (a stopped timer may stay in the runtime's
// heap, with its context, until its deadline is due).
func (r *Runner) do(vol cloud.VolumeID, run reconciler.Running, f func() error) {
	run.Since = r.cfg.Host.Now()
	if r.cfg.OnCall != nil {
		r.cfg.OnCall(r.cfg.Node, vol, run)
	}
	r.cfg.Calls.start(vol, run, f)
}

// diskMounts is the agent's Mounts: the data directory's layout, the
// mounter and the node's Devices.
type diskMounts struct {
	layout  layout.Layout
	mounter mount.Mounter
	devices Devices
	plugin  string
}

func (d diskMounts) Stage(c context.Context, vol cloud.VolumeID, device string) error {
	target, err := d.layout.GlobalMount(d.plugin, string(vol))
	if err != nil {
		return err
	}
	source, release, err := d.devices.Source(c, vol, device)
	if err != nil {
		return fmt.Errorf("device %s of volume %s: %w", device, vol, err)
	}
	defer release() // held until the stage returned: see Devices
	return d.mounter.Stage(source, target)
}

func (d diskMounts) Unstage(vol cloud.VolumeID) error {
	target, err := d.layout.GlobalMount(d.plugin, string(vol))
	if err != nil {
		return err
	}
	// plugins/<plugin>/mounts/ stays, empty or not: the next stage finds
	// it (the mounter holds it open), and Scan finds nothing in it.
	return d.mounter.Unstage(target)
}

func (d diskMounts) Publish(vol cloud.VolumeID, uid string, readOnly bool) error {
	staged, err := d.layout.GlobalMount(d.plugin, string(vol))
	if err != nil {
		return err
	}
	target, err := d.layout.PodVolume(uid, d.plugin, string(vol))
	if err != nil {
		return err
	}
	return d.mounter.Publish(staged, target, readOnly)
}

func (d diskMounts) Unpublish(vol cloud.VolumeID, uid string) error {
	target, err := d.layout.PodVolume(uid, d.plugin, string(vol))
	if err != nil {
		return err
	}
	// Unpublish removes the workload's directories once empty; pods/
	// stays.
	return d.mounter.Unpublish(target)
}

func (r *Runner) record(f reconciler.Record) {
	obj := events.Ref{Kind: events.KindWorkload, Name: f.Workload, UID: r.uids.workload(f.Workload)}
	if f.Workload == "" {
		obj = events.Ref{Kind: events.KindNode, Name: string(r.cfg.Node), UID: r.uids.node}
	}
	r.cfg.Host.Record(events.Event{Time: r.cfg.Host.Now(), Object: obj, Type: f.Type, Node: string(r.cfg.Node), Warning: f.Warning, Message: f.Message}, f.Volume)
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
func (r *Runner) desired(m *messages.NodeWorkloads) reconciler.DesiredChanged {
	uids := make(map[string]string, len(m.Workloads))
	for _, w := range m.Workloads {
		uids[w.Uid] = w.ObjectUid
	}
	r.uids.update(m.Revision, m.NodeObjectUid, uids)
	return reconciler.DesiredChanged{Workloads: r.validWorkloads(m), Revision: m.Revision}
}

func (r *Runner) validWorkloads(m *messages.NodeWorkloads) []reconciler.Workload {
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
			r.record(reconciler.Record{Type: reconciler.EventFailedMount, Workload: w.Uid, Warning: true, Message: "refusing workload: " + err.Error()})
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
