package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// runner carries out a plan on one embedded tether. It runs actions one at
// a time, so a controller restart never races with a desired-state change.
type runner struct {
	cfg   Config
	e     *bootstrap.Embedded
	chk   *Checker
	rep   *Report
	owner map[cloud.VolumeID]string // exclusive volume -> its workload
	wls   map[string]store.Workload
	seq   int
}

func volName(i int) cloud.VolumeID { return cloud.VolumeID(fmt.Sprintf("v%03d", i)) }

func volMode(i int) cloud.AccessMode {
	if i%4 == 3 {
		return cloud.MultiNode
	}
	return cloud.Exclusive
}

func (r *runner) setup() error {
	r.owner, r.wls = map[cloud.VolumeID]string{}, map[string]store.Workload{}
	for i := 0; i < r.cfg.Volumes; i++ {
		if err := r.e.Cloud.CreateVolumeChecked(volName(i), volMode(i)); err != nil {
			return err
		}
		if err := r.e.Ctl().ApplyVolume(store.VolumeSpec{ID: volName(i), Mode: volMode(i)}); err != nil {
			return err
		}
	}
	return nil
}

// faults runs the plan in real time.
func (r *runner) faults(ctx context.Context) error {
	start := time.Now()
	for _, a := range Plan(r.cfg.Seed, r.cfg.Duration, r.cfg.Volumes, r.cfg.Nodes) {
		if wait := time.Until(start.Add(a.At)); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait): // pacing the plan, not synchronization
			}
		}
		if err := r.do(a); err != nil {
			return fmt.Errorf("chaos: %s at %s: %w", a.Kind, a.At, err)
		}
	}
	return nil
}

func (r *runner) do(a Action) error {
	n := r.e.NodeNames[a.Node]
	switch a.Kind {
	case KillVolume:
		r.kill(a.How, "volume/"+string(volName(a.Volume)), "volume")
	case KillNode:
		r.noteAll("node actor %s killed (%s)", n, a.How)
		r.kill(a.How, "node/"+string(n), "node")
	case KillSync:
		r.kill(a.How, "sync", "sync")
	case KillAgent:
		r.noteAll("agent %s killed", n)
		r.kill(ByPanic, "agent/"+string(n), "agent")
	case RestartAgent:
		r.noteAll("agent %s restarted", n)
		r.rep.KillsByKind["agent-restart"]++
		r.rep.Kills++
		if err := r.e.StopAgent(n); err != nil {
			return err
		}
		return r.e.StartAgent(n)
	case RestartController:
		r.noteAll("controller restarted")
		r.rep.KillsByKind["controller"]++
		r.rep.Kills++
		return r.e.RestartController()
	case CreateWorkload, MoveWorkload, DeleteWorkload:
		r.churn(a)
	default:
		return r.cloudFault(a, n)
	}
	return nil
}

func (r *runner) kill(how, name, kind string) {
	r.rep.KillsByKind[kind+"/"+how]++
	r.rep.Kills++
	sys := r.e.System
	pid := actor.NewPID(sys.Address(), name)
	switch how {
	case ByStop:
		sys.Root.Stop(pid)
	case ByPoison:
		sys.Root.Poison(pid)
	default:
		sys.Root.Send(pid, &messages.Crash{Reason: "chaos"})
	}
}

func (r *runner) cloudFault(a Action, n cloud.NodeName) error {
	cl := r.e.Cloud
	inst, _ := cl.InstanceOf(n)
	if a.Kind != CalmCloud && a.Kind != StartInstance {
		r.rep.Faults++
		r.rep.FaultsByKind[a.Kind]++
	}
	switch a.Kind {
	case Terminate:
		return cl.Terminate(inst)
	case StartInstance:
		return cl.Start(inst)
	case CloudErrors:
		for _, m := range []sim.Method{sim.MethodAttach, sim.MethodDetach, sim.MethodInstanceVolumes, sim.MethodVolumesAreAttached} {
			cl.SetErrorRate(m, 0.3, cloud.KindRetryable)
		}
	case LatencySpike:
		cl.SetLatency(30 * time.Millisecond)
	case Throttle:
		cl.SetThrottle(30, 5)
	case CalmCloud:
		r.calmCloud()
	}
	return nil
}

func (r *runner) calmCloud() {
	cl := r.e.Cloud
	for _, m := range []sim.Method{sim.MethodAttach, sim.MethodDetach, sim.MethodInstanceVolumes, sim.MethodVolumesAreAttached} {
		cl.SetErrorRate(m, 0, cloud.KindRetryable)
	}
	cl.SetLatency(0)
	cl.SetThrottle(0, 0)
}

// churn creates, moves or deletes workloads. An exclusive volume serves one
// workload at a time (two claims would be a Multi-Attach wait, not chaos).
func (r *runner) churn(a Action) {
	ctl := r.e.Ctl()
	uids := make([]string, 0, len(r.wls))
	for u := range r.wls {
		uids = append(uids, u)
	}
	sort.Strings(uids)
	switch {
	case a.Kind == CreateWorkload:
		v := volName(a.Volume)
		if r.owner[v] != "" {
			return
		}
		r.seq++
		w := store.Workload{UID: fmt.Sprintf("w%04d", r.seq), Node: r.e.NodeNames[a.Node], Volumes: []cloud.VolumeID{v}}
		if ctl.ApplyWorkload(w) == nil {
			r.chk.Note(v, "workload %s created on %s", w.UID, w.Node)
			r.wls[w.UID] = w
			if volMode(a.Volume) == cloud.Exclusive {
				r.owner[v] = w.UID
			}
		}
	case len(uids) == 0:
	case a.Kind == MoveWorkload:
		w := r.wls[uids[a.Other%len(uids)]]
		from := w.Node
		w.Node = r.e.NodeNames[a.Node]
		if ctl.ApplyWorkload(w) == nil {
			r.chk.Note(w.Volumes[0], "workload %s moved %s -> %s", w.UID, from, w.Node)
			r.wls[w.UID] = w
		}
	default:
		w := r.wls[uids[a.Other%len(uids)]]
		if ctl.DeleteWorkload(w.UID) == nil {
			r.chk.Note(w.Volumes[0], "workload %s deleted from %s", w.UID, w.Node)
			delete(r.wls, w.UID)
			for _, v := range w.Volumes {
				if r.owner[v] == w.UID {
					delete(r.owner, v)
				}
			}
		}
	}
}

// calm ends every fault: cloud knobs off, instances running, agents up.
func (r *runner) calm() {
	r.calmCloud()
	for _, n := range r.e.NodeNames {
		if inst, ok := r.e.Cloud.InstanceOf(n); ok && !r.e.Cloud.Running(inst) {
			r.e.Cloud.Start(inst)
		}
		if _, ok := r.e.Agents[n]; !ok {
			r.e.StartAgent(n)
		}
	}
}

// converge waits until the ground truth matches the desired state.
func (r *runner) converge(ctx context.Context, limit time.Duration) (bool, string) {
	deadline := time.Now().Add(limit)
	for {
		diff := r.diff()
		if diff == "" {
			return true, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, diff
		}
		time.Sleep(50 * time.Millisecond) // polling ground truth with a deadline
	}
}

// diff: attachments exactly where workloads are, and exactly their mounts
// (stage and publish) on disk, nothing half-done.
func (r *runner) diff() string {
	wantAtt := map[cloud.VolumeID][]cloud.NodeName{}
	wantMounts := map[cloud.NodeName][]string{}
	for _, w := range r.wls {
		for _, v := range w.Volumes {
			if !slices.Contains(wantAtt[v], w.Node) {
				wantAtt[v] = append(wantAtt[v], w.Node)
				wantMounts[w.Node] = append(wantMounts[w.Node], "stage "+string(v))
			}
			wantMounts[w.Node] = append(wantMounts[w.Node], "publish "+w.UID+"/"+string(v))
		}
	}
	truth := r.e.Cloud.Attachments()
	for i := 0; i < r.cfg.Volumes; i++ {
		v := volName(i)
		var got []cloud.NodeName
		for _, inst := range truth[v] {
			for _, n := range r.e.NodeNames {
				if in, _ := r.e.Cloud.InstanceOf(n); in == inst {
					got = append(got, n)
				}
			}
		}
		slices.Sort(got)
		slices.Sort(wantAtt[v])
		if !slices.Equal(got, wantAtt[v]) {
			return fmt.Sprintf("%s attached to %v, want %v", v, got, wantAtt[v])
		}
	}
	for _, n := range r.e.NodeNames {
		if d := r.diffMounts(n, wantMounts[n]); d != "" {
			return d
		}
	}
	return ""
}

func (r *runner) diffMounts(n cloud.NodeName, want []string) string {
	l, err := layout.New(r.e.NodeDir(n))
	if err != nil {
		return err.Error()
	}
	m, err := r.e.Mounter(n)
	if err != nil {
		return err.Error()
	}
	found, err := mount.Scan(l, m)
	if err != nil {
		return err.Error()
	}
	var got []string
	for _, e := range found.Entries {
		s := e.Kind + " " + e.Volume
		if e.Kind == mount.KindPublish {
			s = e.Kind + " " + e.UID + "/" + e.Volume
		}
		if e.State != mount.Mounted {
			s += " (" + e.State.String() + ")"
		}
		got = append(got, s)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Sprintf("node %s has %v, want %v", n, got, want)
	}
	return ""
}

// noteAll adds a line to every volume's history (node-wide events).
func (r *runner) noteAll(format string, args ...any) {
	for i := 0; i < r.cfg.Volumes; i++ {
		r.chk.Note(volName(i), format, args...)
	}
}
