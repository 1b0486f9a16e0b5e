package agent

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/heapstat"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/runtime/spawn"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/mount"
)

// nopMounter mounts nothing and keeps nothing: the heap measured is the
// agent's.
type nopMounter struct{}

func (nopMounter) Stage(string, string) error                  { return nil }
func (nopMounter) Unstage(string) error                        { return nil }
func (nopMounter) Publish(string, string, bool) error          { return nil }
func (nopMounter) Unpublish(string) error                      { return nil }
func (nopMounter) Inspect(string) (mount.State, string, error) { return mount.Absent, "", nil }
func (nopMounter) Name() string                                { return "symlink" }

type nopDevices struct{}

func (nopDevices) Source(context.Context, cloud.VolumeID, string) (string, func(), error) {
	return "/dev/null", noRelease, nil
}

// fakeNode answers an agent as the controller's node actor would, at once:
// its desired state in three growing snapshots, and a status echoing each
// report with every volume of the node attached. Everything it sends is
// made before the agents start (in tether it belongs to the controller).
type fakeNode struct {
	snapshots []*messages.NodeWorkloads
	attached  []*messages.AttachedVolume
}

func (f *fakeNode) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.AgentStarted:
		for _, s := range f.snapshots {
			ctx.Send(ctx.Sender(), s)
		}
	case *messages.ReportVolumesInUse:
		ctx.Send(ctx.Sender(), &messages.NodeStatusUpdated{Node: m.Node, VolumesAttached: f.attached, VolumesInUse: m.VolumeIds, InUseSeq: m.Seq})
	}
}

// agentHeapPerVolume starts agents agents of perNode volumes each (one
// workload per volume), waits until all is mounted and reported, and
// returns the live heap they keep, per volume.
func agentHeapPerVolume(tb testing.TB, agents, perNode int) float64 {
	dir := tb.TempDir()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	defer sys.Shutdown()
	log := logrus.New()
	log.SetOutput(io.Discard)
	fakes := map[cloud.NodeName]*actor.PID{}
	var names []cloud.NodeName
	for n := range agents {
		node := cloud.NodeName(fmt.Sprintf("n%d", n))
		f := &fakeNode{}
		var ws []*messages.WorkloadSpec
		for i := range perNode {
			vol := fmt.Sprintf("%s-v%d", node, i)
			ws = append(ws, &messages.WorkloadSpec{Uid: fmt.Sprintf("%s-w%d", node, i), ObjectUid: fmt.Sprintf("uid-%s-%d", node, i), Volumes: []*messages.VolumeUse{{VolumeId: vol}}})
			f.attached = append(f.attached, &messages.AttachedVolume{VolumeId: vol, DevicePath: fmt.Sprintf("/dev/xvd%d", i)})
		}
		for i, cut := range []int{perNode / 3, 2 * perNode / 3, perNode} {
			f.snapshots = append(f.snapshots, &messages.NodeWorkloads{Node: string(node), Workloads: ws[:cut], Revision: uint64(i + 1), NodeObjectUid: "uid-" + string(node)})
		}
		fakes[node] = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return f }))
		names = append(names, node)
	}
	guard := spawn.New(sys) // as the controller's, shared
	before := heapstat.Live()
	var started []*Agent
	for _, node := range names {
		cfg := DefaultConfig()
		cfg.Node, cfg.DataDir, cfg.Log, cfg.HeartbeatEvery = node, filepath.Join(dir, string(node)), log, time.Hour
		cfg.Mounter, cfg.Devices, cfg.Guard = nopMounter{}, nopDevices{}, guard
		cfg.Controller = func(n cloud.NodeName) *actor.PID { return fakes[n] }
		a, err := Start(sys, cfg, actor.DefaultSupervisorStrategy())
		if err != nil {
			tb.Fatal(err)
		}
		started = append(started, a)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for _, a := range started {
		for {
			st, err := a.Status(5 * time.Second)
			if err == nil && len(st.VolumesInUse) == perNode && len(st.Mounts) == 2*perNode && !slices.ContainsFunc(st.Mounts, func(m *messages.AgentMount) bool { return m.State != "Mounted" }) {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("agent %s not at rest: %+v, %v", a.cfg.Node, st, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	after := heapstat.Live()
	for _, a := range started {
		if err := a.Stop(); err != nil {
			tb.Error(err)
		}
	}
	return float64(int64(after)-int64(before)) / float64(agents*perNode)
}

// BenchmarkAgentHeapAtRest reports the live heap node agents keep at rest
// per volume, shell and machine (go test -run '^$' -bench AgentHeapAtRest
// ./node).
func BenchmarkAgentHeapAtRest(b *testing.B) {
	for _, shape := range []struct{ agents, perNode int }{{1000, 10}, {100, 100}} {
		b.Run(fmt.Sprintf("%dx%d", shape.agents, shape.perNode), func(b *testing.B) {
			var sum float64
			for range b.N {
				sum += agentHeapPerVolume(b, shape.agents, shape.perNode)
			}
			b.ReportMetric(sum/float64(b.N), "B/volume")
		})
	}
}
