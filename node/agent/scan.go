package agent

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/mount"
	"github.com/tether/tether/node/reconciler"
)

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
	a.r.Scanned(a.restoredFrom(m.found))
}

// restoredFrom converts the scan into a Restored event, with the calls of
// earlier incarnations still running. Entries of another plugin are left
// alone.
func (a *agentActor) restoredFrom(found mount.Found) reconciler.Restored {
	r := reconciler.Restored{Stages: map[cloud.VolumeID]reconciler.Found{}, Publishes: map[reconciler.PubKey]reconciler.Found{}, Running: a.r.Running()}
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
	if a.r == nil {
		return out
	}
	st := a.r.Status()
	out.Ready = st.Ready
	for _, v := range st.InUse {
		out.VolumesInUse = append(out.VolumesInUse, string(v))
	}
	for _, m := range st.Mounts {
		out.Mounts = append(out.Mounts, &messages.AgentMount{VolumeId: string(m.Volume), WorkloadUid: m.UID, State: m.State.String()})
	}
	return out
}
