package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/messages"
)

// distRunner carries out a plan on a fleet, one action at a time.
type distRunner struct {
	cfg   DistributedConfig
	f     *distributed.Fleet
	nodes []cloud.NodeName
	rep   *Report
	tl    *timeline
	cloud *cloudremote.Client // the runner's own, dialled again after each restart of the cloud
	store *store.Etcd         // reads the node statuses after a member's kill
	// stopWatch ends the cloud's watch; watched is closed once it ended.
	stopWatch func()
	watched   chan struct{}
	stopped   bool // the fleet was stopped

	// The desired state, as the runner asked for it.
	wls     map[string]store.Workload
	owner   map[cloud.VolumeID]string // exclusive volume -> its workload
	created map[string]bool           // every workload ever created
	seq     int

	// What the faults did.
	down      map[cloud.NodeName]bool // machines powered off
	dead      map[int]bool            // members killed, not started again
	cut       int                     // the member partitioned, -1: none
	cloudDown bool
	later     []int // members to start once the cloud is back and they are not cut off
	faultsOn  distributed.Faults
	outsider  *outsider  // the misconfigured member running, if any
	outsiders []outsider // those that ended, to judge
	apiDown   time.Time  // after a failed API call, churn waits until then
	restarts  int        // processes started again
}

func (r *distRunner) api(ctx context.Context, f func(context.Context, messages.TetherClient) error) error {
	c, actx, closeConn, err := r.f.API(ctx)
	if err != nil {
		return err
	}
	defer closeConn()
	return f(actx, c)
}

// apply sends docs through a member's API, bounded by within.
func (r *distRunner) apply(within time.Duration, docs ...*messages.Document) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return r.api(ctx, func(ctx context.Context, c messages.TetherClient) error {
		_, err := api.Send(ctx, c, docs)
		return err
	})
}

// deleteWorkload deletes uid through a member's API; already gone is done.
func (r *distRunner) deleteWorkload(within time.Duration, uid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return r.api(ctx, func(ctx context.Context, c messages.TetherClient) error {
		_, err := c.Delete(ctx, &messages.DeleteRequest{Kind: "workload", Name: uid})
		if grpcstatus.Code(err) == codes.NotFound {
			return nil
		}
		return err
	})
}

// until retries f until it succeeds, for up to within.
func until(within time.Duration, what string, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		time.Sleep(200 * time.Millisecond) // a retry's pace, not a synchronization
	}
}

func modeDoc(i int) string {
	if volMode(i) == cloud.MultiNode {
		return "ReadWriteMany"
	}
	return "ReadWriteOnce"
}

func workloadDoc(w store.Workload) *messages.Document {
	var vols []*messages.WorkloadVolumeDoc
	for _, v := range w.Volumes {
		vols = append(vols, &messages.WorkloadVolumeDoc{Name: string(v)})
	}
	return &messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: w.UID, Node: string(w.Node), Volumes: vols}}}
}

// setup declares the nodes and the volumes (the API creates their disks).
func (r *distRunner) setup() error {
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: string(n)}}})
	}
	for i := 0; i < r.cfg.Volumes; i++ {
		docs = append(docs, &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: string(volName(i)), AccessMode: modeDoc(i)}}})
	}
	return until(60*time.Second, "chaos: setup", func() error { return r.apply(20*time.Second, docs...) })
}

// faults runs the plan in real time.
func (r *distRunner) faults(ctx context.Context) error {
	return runPlan(ctx, DistributedPlan(r.cfg.Seed, r.cfg.Duration, r.cfg.Volumes, r.cfg.Nodes), r.do)
}

func (r *distRunner) do(a Action) error {
	n := r.nodes[a.Node]
	switch a.Kind {
	case KillVolume:
		r.tl.add(record{kind: recNote, vol: volName(a.Volume), text: fmt.Sprintf("volume actor killed (%s)", a.How)})
		r.killActor("volume/"+string(volName(a.Volume)), a)
	case KillNode:
		r.noteAll("node actor %s killed (%s)", n, a.How)
		r.killActor("node/"+string(n), a)
	case KillSync:
		r.noteAll("sync actor killed (%s)", a.How)
		r.killActor("sync", a)
	case KillAgent:
		if r.down[n] || !r.f.AgentRunning(n) {
			return nil
		}
		r.noteAll("agent %s killed", n)
		r.kill("agent/" + ByPanic)
		r.warn(r.f.ControlAgent(n, distributed.Command{Kill: "agent/" + string(n), How: ByPanic}))
	case RestartAgent, SigkillAgent:
		return r.restartAgent(n, a.Kind == SigkillAgent)
	case KillMember, StartMember:
		return r.member(a.Kind, a.Other%r.cfg.Controllers)
	case Partition, Heal:
		return r.partition(a.Kind, a.Other%r.cfg.Controllers)
	case MisconfiguredMember:
		return r.misconfigured(a.Other)
	case EndMisconfigured:
		return r.endMisconfigured()
	case KillCloud, StartCloud:
		return r.cloudProcess(a.Kind)
	case RestartEtcd:
		return r.restartEtcd()
	case CreateWorkload, MoveWorkload, DeleteWorkload:
		r.churn(a)
	case Terminate, ReplaceInstance, DeleteInstance, StartInstance:
		return r.machine(a.Kind, n)
	case ConsoleDetach:
		return r.consoleDetach(volName(a.Volume))
	default:
		return r.cloudFault(a.Kind)
	}
	return nil
}

func (r *distRunner) kill(kind string) {
	r.rep.KillsByKind[kind]++
	r.rep.Kills++
}

func (r *distRunner) count(kind string) {
	r.rep.Faults++
	r.rep.FaultsByKind[kind]++
}

// warn reports an error the run goes on after.
func (r *distRunner) warn(err error) {
	if err != nil {
		fmt.Fprintf(r.cfg.Log, "chaos: %v\n", err)
	}
}

// killActor has a running member kill an actor wherever the cluster placed
// it, as the embedded chaos kills it.
func (r *distRunner) killActor(name string, a Action) {
	i, ok := r.liveMember(a.Other)
	if !ok {
		return
	}
	kind, _, _ := strings.Cut(name, "/")
	r.kill(kind + "/" + a.How)
	r.warn(r.f.ControlController(i, distributed.Command{Kill: name, How: a.How}))
}

// liveMember is the first running member from other on that is not cut
// off (or any running member).
func (r *distRunner) liveMember(other int) (int, bool) {
	n, fallback := r.cfg.Controllers, -1
	for k := range n {
		i := (other + k) % n
		if r.dead[i] {
			continue
		}
		if i != r.cut {
			return i, true
		}
		fallback = i
	}
	return fallback, fallback >= 0
}

func (r *distRunner) running() int {
	c := 0
	for i := range r.cfg.Controllers {
		if !r.dead[i] {
			c++
		}
	}
	return c
}

// noteAll adds a line to every volume's history (node-wide events).
func (r *distRunner) noteAll(format string, args ...any) {
	at := time.Now()
	for i := 0; i < r.cfg.Volumes; i++ {
		r.tl.add(record{kind: recNote, time: at, vol: volName(i), text: fmt.Sprintf(format, args...)})
	}
}

// churn creates, moves or deletes workloads through the API, as the
// embedded chaos does. A call that fails may have taken effect all the
// same: the runner's desired state is what it asked for, and calm asks
// for all of it again once the faults stop.
func (r *distRunner) churn(a Action) {
	if time.Now().Before(r.apiDown) {
		return
	}
	uids := make([]string, 0, len(r.wls))
	for u := range r.wls {
		uids = append(uids, u)
	}
	sort.Strings(uids)
	var err error
	switch {
	case a.Kind == CreateWorkload:
		v := volName(a.Volume)
		if r.owner[v] != "" {
			return
		}
		r.seq++
		w := store.Workload{UID: fmt.Sprintf("w%04d", r.seq), Node: r.nodes[a.Node], Volumes: []cloud.VolumeID{v}}
		err = r.apply(3*time.Second, workloadDoc(w))
		r.tl.add(record{kind: recNote, vol: v, text: fmt.Sprintf("workload %s created on %s%s", w.UID, w.Node, errNote(err))})
		r.wls[w.UID], r.created[w.UID] = w, true
		if volMode(a.Volume) == cloud.Exclusive {
			r.owner[v] = w.UID
		}
	case len(uids) == 0:
	case a.Kind == MoveWorkload:
		w := r.wls[uids[a.Other%len(uids)]]
		from := w.Node
		w.Node = r.nodes[a.Node]
		err = r.apply(3*time.Second, workloadDoc(w))
		r.tl.add(record{kind: recNote, vol: w.Volumes[0], text: fmt.Sprintf("workload %s moved %s -> %s%s", w.UID, from, w.Node, errNote(err))})
		r.wls[w.UID] = w
	default:
		w := r.wls[uids[a.Other%len(uids)]]
		err = r.deleteWorkload(3*time.Second, w.UID)
		r.tl.add(record{kind: recNote, vol: w.Volumes[0], text: fmt.Sprintf("workload %s deleted from %s%s", w.UID, w.Node, errNote(err))})
		delete(r.wls, w.UID)
		for _, v := range w.Volumes {
			if r.owner[v] == w.UID {
				delete(r.owner, v)
			}
		}
	}
	if err != nil {
		r.apiDown = time.Now().Add(time.Second)
	}
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (unsure: %v)", err)
}

// cloudFault turns a cloud or store fault on in every running member
// (until the next CalmCloud), as the embedded chaos does in its cloud.
// consoleDetach detaches vol from the first instance it is attached to on
// the cloud's own account (the cloud service's admin side), as an operator
// in the cloud's console would. The judge sees the removal's reason on
// the cloud's change stream; the timeline notes it before.
func (r *distRunner) consoleDetach(vol cloud.VolumeID) error {
	all, err := r.cloud.Attachments()
	if err != nil {
		r.warn(fmt.Errorf("console detach of %s: %w", vol, err)) // the cloud may be down: no fault then
		return nil
	}
	on := all[vol]
	if len(on) == 0 {
		return nil
	}
	r.count(ConsoleDetach)
	r.tl.add(record{kind: recNote, vol: vol, text: fmt.Sprintf("console detach from %s", on[0])})
	r.warn(r.cloud.ConsoleDetach(vol, on[0]))
	return nil
}

func (r *distRunner) cloudFault(kind string) error {
	f := &r.faultsOn
	switch kind {
	case CloudErrors:
		f.ErrorRate = 0.3
	case LatencySpike:
		f.Latency = 30 * time.Millisecond
	case Throttle:
		f.ThrottleQPS, f.ThrottleBurst = 30, 5
	case ReplyLoss:
		f.ReplyLoss = 0.2
	case HangCalls:
		f.HangRate = 0.2
	case StoreFailures:
		f.StoreFailRate = 0.5
	case CalmCloud:
		*f = distributed.Faults{}
	default:
		return fmt.Errorf("chaos: unknown action %q", kind)
	}
	if kind != CalmCloud {
		r.count(kind)
	}
	for i := range r.cfg.Controllers {
		if !r.dead[i] {
			r.warn(r.f.ControlController(i, r.faultsCommand()))
		}
	}
	return nil
}

// faultsCommand tells a member the faults now on.
func (r *distRunner) faultsCommand() distributed.Command {
	f := r.faultsOn
	f.Seed = r.cfg.Seed
	return distributed.Command{Faults: &f}
}
