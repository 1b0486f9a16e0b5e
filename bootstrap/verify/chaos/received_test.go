package chaos

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// receivedRig is one node agent on a real actor system, recorded by a
// Checker, whose controller is the test: it reads the agent's in-use
// reports and sends it the node statuses it wants, recording what a
// controller would persist first.
type receivedRig struct {
	t       *testing.T
	chk     *Checker
	pid     *actor.PID
	sys     *actor.ActorSystem
	reports chan *messages.ReportVolumesInUse
	device  string
}

const rigNode cloud.NodeName = "n1"

func newReceivedRig(t *testing.T, breakStale bool) *receivedRig {
	dir := t.TempDir()
	r := &receivedRig{t: t, chk: &Checker{}, reports: make(chan *messages.ReportVolumesInUse, 16)}
	c := sim.New(sim.Config{ContentDir: filepath.Join(dir, "cloud")})
	c.ObserveSync(r.chk.onChange)
	inst := c.AddInstance(rigNode)
	c.CreateVolume("v", cloud.Exclusive)
	dev, err := c.Attach(context.Background(), "v", inst)
	if err != nil {
		t.Fatal(err)
	}
	r.device = dev
	r.sys = actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	ctl := r.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.ReportVolumesInUse); ok {
			r.reports <- m
		}
	}))
	l, err := layout.New(filepath.Join(dir, "nodes", string(rigNode)))
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(testWriter{t})
	cfg := agent.DefaultConfig()
	cfg.Node, cfg.DataDir, cfg.Log, cfg.HeartbeatEvery = rigNode, l.Root(), log, time.Hour
	cfg.Devices = r.chk.WrapDevices(rigNode, agent.SimDevices{Cloud: c, Node: rigNode})
	cfg.Mounter = r.chk.WrapMounter(rigNode, mount.NewSymlink(l))
	cfg.Controller = func(cloud.NodeName) *actor.PID { return ctl }
	cfg.Agent.BreakStaleStatus = breakStale
	r.chk.WireAgents(&cfg)
	a, err := agent.Start(r.sys, cfg, actor.NewOneForOneStrategy(0, 0, actor.DefaultDecider))
	if err != nil {
		t.Fatal(err)
	}
	r.pid = a.PID()
	t.Cleanup(func() {
		if err := a.Stop(); err != nil {
			t.Errorf("stop agent: %v", err)
		}
		r.sys.Root.Stop(ctl)
		r.sys.Shutdown()
		if err := agent.Teardown(l.Root(), mount.NewSymlink(l)); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// status persists (records as durable) and sends a node status listing
// v attached or not, in use or not, answering report seq.
func (r *receivedRig) status(attached, inUse bool, seq uint64) {
	st := statusRec{attached: map[cloud.VolumeID]string{}, inUse: map[cloud.VolumeID]bool{}}
	m := &messages.NodeStatusUpdated{Node: string(rigNode), InUseSeq: seq}
	if attached {
		st.attached["v"] = r.device
		m.VolumesAttached = []*messages.AttachedVolume{{VolumeId: "v", DevicePath: r.device}}
	}
	if inUse {
		st.inUse["v"] = true
		m.VolumesInUse = []string{"v"}
	}
	r.chk.add(record{kind: recStatus, node: rigNode, status: st})
	r.sys.Root.Send(r.pid, m)
}

// inUseReport waits (bounded) for the agent to report v in use.
func (r *receivedRig) inUseReport() uint64 {
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-r.reports:
			if len(m.VolumeIds) == 1 && m.VolumeIds[0] == "v" {
				return m.Seq
			}
		case <-deadline:
			r.t.Fatal("the agent never reported v in use")
		}
	}
}

// waitFor polls the checker (bounded) until cond holds.
func (r *receivedRig) waitFor(what string, cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s within 10s; history:\n%s", what, strings.Join(r.chk.History("v"), "\n"))
		}
		time.Sleep(5 * time.Millisecond) // polling the recorded timeline with a deadline
	}
}

// The controller grants v (attached, then in use), then withdraws the
// listing before the agent acted on the grant: the durable statuses
// permit a stage (the listing was granted), and a sound agent does not
// stage until the listing comes back; an agent acting on the status
// before the last (BreakStaleStatus) stages on the withdrawn listing,
// and only the status it had received tells.
func TestStageJudgedAgainstTheReceivedStatus(t *testing.T) {
	for _, brk := range []bool{false, true} {
		t.Run(map[bool]string{false: "sound", true: "stale"}[brk], func(t *testing.T) {
			r := newReceivedRig(t, brk)
			r.status(true, false, 0) // attached, nobody wants it yet
			r.sys.Root.Send(r.pid, &messages.NodeWorkloads{Node: string(rigNode), Revision: 1,
				Workloads: []*messages.WorkloadSpec{{Uid: "w1", Volumes: []*messages.VolumeUse{{VolumeId: "v"}}}}})
			seq := r.inUseReport()
			r.chk.add(record{kind: recStatus, node: rigNode, status: statusRec{attached: map[cloud.VolumeID]string{"v": r.device}, inUse: map[cloud.VolumeID]bool{"v": true}}})
			r.status(false, true, seq) // granted durably, withdrawn before the agent heard
			if !brk {
				r.status(true, true, seq) // listed again: now it may stage
			}
			r.waitFor("stage and publish", func() bool { return r.chk.MountCalls() >= 2 || len(r.chk.Violations()) > 0 })
			vs := r.chk.Violations()
			if !brk {
				if len(vs) != 0 {
					t.Fatalf("sound agent: %v", vs)
				}
				if n := r.chk.DecisionsChecked(); n != r.chk.MountCalls() {
					t.Fatalf("%d decisions checked, %d mount calls", n, r.chk.MountCalls())
				}
				return
			}
			// Only the received status tells: every violation is judged on
			// it (the durable ones permit the stage), the stage first.
			for _, v := range vs {
				if v.Invariant != "I3" || !strings.Contains(v.Detail, "status the agent had received") {
					t.Fatalf("stale agent: want I3 judged on the received status only, got %v", vs)
				}
			}
			if len(vs) == 0 || !strings.Contains(vs[0].Detail, "stage while") {
				t.Fatalf("stale agent: want its stage caught, got %v", vs)
			}
			t.Logf("caught: %s", vs[0])
		})
	}
}
