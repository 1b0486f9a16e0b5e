package controller

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/backoff"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/messages"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rig is a controller on a real actor system with the sim cloud, a memory
// store and a fake clock that only the test advances.
type rig struct {
	t     *testing.T
	sys   *actor.ActorSystem
	cloud *sim.Cloud
	store *store.Memory
	rec   *events.Recorder
	clk   *clock.Fake
	ctl   *Controller
	cfg   Config
	calls *callLog // every provider call the controller made

	mu      sync.Mutex
	changes []sim.Change
	// violations: what checkDetach found; reported at cleanup unless a
	// test took them.
	violations []string
	restarts   []time.Duration
	respawns   []string
}

type rigOption func(*Config, *sim.Config)

func newRig(t *testing.T, opts ...rigOption) *rig {
	t.Helper()
	return newRigStore(t, nil, opts...)
}

// remoteMemory is the memory store read as a remote one (etcd's
// RemoteReads): batches read whole tables (Controller.bulk).
type remoteMemory struct{ *store.Memory }

func (remoteMemory) RemoteReads() bool { return true }

func remote(m *store.Memory) store.Store { return remoteMemory{m} }

// newRigStore is newRig with the controller's store wrapped (nil: none).
func newRigStore(t *testing.T, wrap func(*store.Memory) store.Store, opts ...rigOption) *rig {
	t.Helper()
	return newRigListing(t, wrap, cloud.ListingExact, opts...)
}

// newRigListing is newRigStore with a provider whose listing is believed
// only as far as listing says (cloud.Lister).
func newRigListing(t *testing.T, wrap func(*store.Memory) store.Store, listing cloud.Listing, opts ...rigOption) *rig {
	t.Helper()
	// Registered first, so it runs last: after the controller and the
	// actor system have stopped, nothing they started may be left.
	leaks := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1")}
	t.Cleanup(func() { goleak.VerifyNone(t, leaks...) })
	r := &rig{t: t, clk: clock.NewFake(start), store: store.NewMemory(), rec: events.NewRecorder(200)}
	cfg := DefaultConfig()
	cfg.Volume.Backoff.Jitter = 0
	// The rig's tests count calls and timers of live actors over long
	// advances of the clock; passivation has its own (passivate_test.go).
	cfg.PassivateAfter = 0
	cfg.Clock = r.clk
	cfg.Supervisor.Clock = r.clk
	cfg.Supervisor.Policy = backoff.Policy{Initial: 500 * time.Millisecond, Factor: 2, Max: 2 * time.Minute}
	cfg.Supervisor.OnRestart = func(_ *actor.PID, _ int, d time.Duration, _ interface{}) {
		r.mu.Lock()
		r.restarts = append(r.restarts, d)
		r.mu.Unlock()
	}
	cfg.OnRespawn = func(name string, d time.Duration) {
		r.mu.Lock()
		r.respawns = append(r.respawns, name+" "+d.String())
		r.mu.Unlock()
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	log.SetOutput(testWriter{t})
	cfg.Log = log
	cfg.Supervisor.Log = log
	scfg := sim.Config{Now: r.clk.Now, Permissive: true} // tether's decisions, not the cloud's refusals, keep I1
	for _, o := range opts {
		o(&cfg, &scfg)
	}
	r.cfg = cfg
	r.cloud = sim.New(scfg)
	r.cloud.ObserveSync(r.checkDetach)
	r.calls = &callLog{Provider: r.cloud, lister: listing}
	r.cloud.Observe(func(c sim.Change) {
		r.mu.Lock()
		r.changes = append(r.changes, c)
		r.mu.Unlock()
	})
	r.sys = actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	var st store.Store = r.store
	if wrap != nil {
		st = wrap(r.store)
	}
	r.ctl = New(r.sys, cfg, r.calls, st, r.rec)
	if err := r.ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.ctl.Stop(5 * time.Second); err != nil {
			t.Errorf("stop: %v", err)
		}
		r.sys.Shutdown()
		r.checkNoDoubleAttach()
		for _, v := range r.takeViolations() {
			t.Error(v)
		}
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (r *rig) node(names ...cloud.NodeName) {
	r.t.Helper()
	for _, n := range names {
		r.cloud.AddInstance(n)
		must(r.t, r.ctl.ApplyNode(store.NodeSpec{Name: n}))
		r.ctl.Heartbeat(n) // its agent's hello: a node is Ready once its agent reports
	}
}

func (r *rig) volume(id cloud.VolumeID, mode cloud.AccessMode) {
	r.t.Helper()
	r.cloud.CreateVolume(id, mode)
	must(r.t, r.ctl.ApplyVolume(store.VolumeSpec{ID: id, Mode: mode}))
}

func (r *rig) workload(uid string, node cloud.NodeName, vols ...cloud.VolumeID) {
	r.t.Helper()
	must(r.t, r.ctl.ApplyWorkload(store.Workload{UID: uid, Node: node, Volumes: vols}))
}

// eventually polls cond (real time, bounded) until it holds.
func (r *rig) eventually(what string, cond func() bool) {
	r.t.Helper()
	if !testkit.Until(10*time.Second, cond) {
		r.t.Fatalf("not within 10s: %s\ncloud: %v\nevents: %s", what, r.cloud.Attachments(), r.eventLog())
	}
}

// attachedTo is the cloud's ground truth: the nodes vol is attached to.
func (r *rig) attachedTo(vol cloud.VolumeID) []cloud.NodeName {
	var out []cloud.NodeName
	for _, inst := range r.cloud.Attachments()[vol] {
		for _, n := range r.nodeNames() {
			if i, _ := r.cloud.InstanceOf(n); i == inst {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (r *rig) nodeNames() []cloud.NodeName {
	specs, _ := r.store.Nodes()
	var out []cloud.NodeName
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// volState asks the volume actor (through its mailbox, so every message
// sent to it before has been handled) for the state of one attachment.
func (r *rig) volState(vol cloud.VolumeID, n cloud.NodeName) string {
	r.t.Helper()
	st, err := r.ctl.VolumeStatus(vol, 5*time.Second)
	must(r.t, err)
	for _, a := range st.Attachments {
		if a.Node == string(n) {
			return a.State
		}
	}
	return "none"
}

// reported says whether the node's VolumesAttached lists vol.
func (r *rig) reported(n cloud.NodeName, vol cloud.VolumeID) bool {
	r.t.Helper()
	st, err := r.ctl.NodeStatus(n, 5*time.Second)
	must(r.t, err)
	return slices.ContainsFunc(st.VolumesAttached, func(a *messages.AttachedVolume) bool { return a.VolumeId == string(vol) })
}

// settled: attached in the cloud exactly where listed, Attached in the
// volume actor and reported in VolumesAttached.
func (r *rig) settled(vol cloud.VolumeID, nodes ...cloud.NodeName) func() bool {
	return func() bool {
		if !slices.Equal(r.attachedTo(vol), nodes) {
			return false
		}
		for _, n := range nodes {
			if r.volState(vol, n) != "Attached" || !r.reported(n, vol) {
				return false
			}
		}
		return true
	}
}

func (r *rig) events(vol cloud.VolumeID, typ string) []events.Event {
	var out []events.Event
	for _, e := range r.rec.For(events.Ref{Kind: events.KindVolume, Name: string(vol)}) {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (r *rig) eventLog() string {
	var b strings.Builder
	for _, v := range r.cloudVolumes() {
		for _, e := range r.rec.For(events.Ref{Kind: events.KindVolume, Name: string(v)}) {
			fmt.Fprintf(&b, "\n  %s %s %s: %s", v, e.Type, e.Node, e.Message)
		}
	}
	return b.String()
}

func (r *rig) cloudVolumes() []cloud.VolumeID {
	specs, _ := r.store.Volumes()
	var out []cloud.VolumeID
	for _, s := range specs {
		out = append(out, s.ID)
	}
	return out
}

// checkNoDoubleAttach replays the cloud's changes: an exclusive volume is
// never on two instances at once (I1), and no attachment is created twice
// without a detach in between.
func (r *rig) checkNoDoubleAttach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	on := map[cloud.VolumeID]map[cloud.InstanceID]bool{}
	for _, c := range r.changes {
		m := on[c.Volume]
		if m == nil {
			m = map[cloud.InstanceID]bool{}
			on[c.Volume] = m
		}
		if c.Attached && m[c.Instance] {
			r.t.Errorf("volume %s attached twice to %s", c.Volume, c.Instance)
		}
		m[c.Instance] = c.Attached
		if spec, ok, _ := r.store.Volume(c.Volume); ok && spec.Mode == cloud.Exclusive && count(m) > 1 {
			r.t.Errorf("I1 violated: exclusive volume %s on %v", c.Volume, m)
		}
	}
}

func count(m map[cloud.InstanceID]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// inUse reports vols in use on n and waits until each volume actor knows.
func (r *rig) inUse(n cloud.NodeName, vols ...cloud.VolumeID) {
	r.t.Helper()
	prev, err := r.ctl.NodeStatus(n, 5*time.Second)
	must(r.t, err)
	r.ctl.ReportVolumesInUse(n, vols)
	affected := append([]cloud.VolumeID(nil), vols...)
	for _, v := range prev.VolumesInUse {
		affected = append(affected, cloud.VolumeID(v))
	}
	for _, v := range affected {
		want := slices.Contains(vols, v)
		r.eventually(fmt.Sprintf("volume %s knows in-use=%v on %s", v, want, n), func() bool {
			st, err := r.ctl.VolumeStatus(v, 5*time.Second)
			must(r.t, err)
			return slices.Contains(st.NodesInUse, string(n)) == want
		})
	}
}
