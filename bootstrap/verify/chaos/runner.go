package chaos

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// runner carries out a plan on one embedded tether. It runs actions one at
// a time, so a controller restart never races with a desired-state change.
type runner struct {
	cfg   Config
	e     *process.Embedded
	acct  account // e's cloud
	knobs knobs   // how the cloud is made to fail
	chk   *Checker
	rep   *Report
	owner map[cloud.VolumeID]string // exclusive volume -> its workload
	wls   map[string]store.Workload
	seq   int
	down  map[cloud.NodeName]bool // machines powered off
	csi   *csiRig                 // the CSI driver, on CSI (csi.go)
	page  *page                   // the operator's page, with Config.UI (page.go)
}

func volName(i int) cloud.VolumeID { return cloud.VolumeID(fmt.Sprintf("v%03d", i)) }

func volMode(i int) cloud.AccessMode {
	if i%4 == 3 {
		return cloud.MultiNode
	}
	return cloud.Exclusive
}

// mode is volume i's access mode: every fourth volume is multi-node on
// the sim; the loop cloud's disks are all exclusive (it refuses
// multi-node ones: ext4 is mounted by one machine at a time).
func (r *runner) mode(i int) cloud.AccessMode {
	if r.cfg.Cloud == process.CloudLoop {
		return cloud.Exclusive
	}
	return volMode(i)
}

func (r *runner) setup() error {
	r.owner, r.wls, r.down = map[cloud.VolumeID]string{}, map[string]store.Workload{}, map[cloud.NodeName]bool{}
	for i := 0; i < r.cfg.Volumes; i++ {
		if err := r.acct.CreateVolume(volName(i), r.mode(i)); err != nil {
			return err
		}
		if err := r.e.Ctl().ApplyVolume(store.VolumeSpec{ID: volName(i), Mode: r.mode(i)}); err != nil {
			return err
		}
	}
	return nil
}

// faults runs the plan in real time.
func (r *runner) faults(ctx context.Context) error { return runPlan(ctx, planFor(r.cfg), r.do) }

// runPlan carries out plan in real time, each action at its At after the
// start (embedded and distributed runs alike).
func runPlan(ctx context.Context, plan []Action, do func(Action) error) error {
	start := time.Now()
	for _, a := range plan {
		if wait := time.Until(start.Add(a.At)); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait): // pacing the plan, not synchronization
			}
		}
		if err := do(a); err != nil {
			return fmt.Errorf("chaos: %s at %s: %w", a.Kind, a.At, err)
		}
	}
	return nil
}

func (r *runner) do(a Action) error {
	n := r.e.NodeNames[a.Node]
	r.page.action(a, n)
	switch a.Kind {
	case KillVolume:
		r.chk.Note(volName(a.Volume), "volume actor killed (%s)", a.How)
		r.kill(a.How, "volume/"+string(volName(a.Volume)), "volume")
	case KillNode:
		r.noteAll("node actor %s killed (%s)", n, a.How)
		r.kill(a.How, "node/"+string(n), "node")
	case KillSync:
		r.noteAll("sync actor killed (%s)", a.How)
		r.kill(a.How, "sync", "sync")
	case KillAgent:
		r.noteAll("agent %s killed", n)
		r.kill(ByPanic, "agent/"+string(n), "agent")
	case RestartAgent:
		if r.down[n] {
			return nil // nothing runs on a machine that is off
		}
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
	case Terminate, ReplaceInstance, DeleteInstance, StartInstance:
		return r.machine(a.Kind, n)
	default:
		return r.fault(a)
	}
	return nil
}

func (r *runner) kill(how, name, kind string) {
	r.rep.KillsByKind[kind+"/"+how]++
	r.rep.Kills++
	// Through the spawn guard: the actor may be being spawned right now
	// (see actors/runtime/spawn).
	g := r.e.Ctl().Guard() // one guard per actor system, shared by every controller incarnation
	pid := actor.NewPID(r.e.System.Address(), name)
	switch how {
	case ByStop:
		g.Stop(pid)
	case ByPoison:
		g.Poison(pid)
	default:
		g.Send(pid, &messages.Crash{Reason: "chaos"})
	}
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
			if r.mode(a.Volume) == cloud.Exclusive {
				r.owner[v] = w.UID
			}
			if r.csi != nil && r.cfg.Break == "I3-attach" {
				r.csi.sabotage(r.chk, w.Node, v, r.mode(a.Volume))
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

// noteAll adds a line to every volume's history (node-wide events).
func (r *runner) noteAll(format string, args ...any) {
	for i := 0; i < r.cfg.Volumes; i++ {
		r.chk.Note(volName(i), format, args...)
	}
}
