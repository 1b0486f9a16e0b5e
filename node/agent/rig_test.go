package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/runtime/clock"
	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/runtime/supervisor"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rig: the controller and one agent per node on a real actor system, the
// sim cloud keeping volume content on disk, a fake clock. Its mounters
// check I3 against the cloud's ground truth, and its cloud observer checks
// that nothing is detached while mounted.
type rig struct {
	t        *testing.T
	sys      *actor.ActorSystem
	cloud    *sim.Cloud
	store    *store.Memory
	rec      *events.Recorder
	clk      *clock.Fake
	ctl      *controller.Controller
	data     string
	log      *logrus.Logger
	guardian actor.SupervisorStrategy
	agents   map[cloud.NodeName]*Agent
	mounters map[cloud.NodeName]*checkMounter
	inner    map[cloud.NodeName]mount.Mounter
	calls    map[cloud.NodeName]*Calls // shared by a node's successive agents
	// opTimeout and stopGrace of the agents started from now on.
	opTimeout, stopGrace time.Duration

	mu         sync.Mutex
	violations []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	// Registered first, so it runs last: after the agents, the controller
	// and the actor system stopped, and hung mounters were released.
	// Proto.Actor's dead-letter throttle runs a timer goroutine for one
	// throttle period after a dead letter: it ends by itself.
	leaks := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1")}
	t.Cleanup(func() { goleak.VerifyNone(t, leaks...) })
	r := &rig{t: t, clk: clock.NewFake(start), store: store.NewMemory(), rec: events.NewRecorder(200), data: t.TempDir(),
		agents: map[cloud.NodeName]*Agent{}, mounters: map[cloud.NodeName]*checkMounter{}, inner: map[cloud.NodeName]mount.Mounter{},
		calls: map[cloud.NodeName]*Calls{}, opTimeout: 10 * time.Second, stopGrace: time.Second}
	r.log = logrus.New()
	r.log.SetLevel(logrus.WarnLevel)
	r.log.SetOutput(testWriter{t})
	cfg := controller.DefaultConfig()
	cfg.Clock, cfg.Log = r.clk, r.log
	cfg.Supervisor.Clock, cfg.Supervisor.Log = r.clk, r.log
	cfg.Volume.Backoff.Jitter = 0
	r.cloud = sim.New(sim.Config{Now: r.clk.Now, ContentDir: filepath.Join(r.data, "cloud")})
	r.cloud.Observe(r.observe)
	r.sys = actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	r.guardian = supervisor.NewStrategy(cfg.Supervisor)
	r.ctl = controller.New(r.sys, cfg, r.cloud, r.store, r.rec)
	must(t, r.ctl.Start())
	t.Cleanup(func() {
		for _, a := range r.agents {
			if err := a.Stop(); err != nil {
				t.Errorf("stop agent: %v", err)
			}
		}
		must(t, r.ctl.Stop(5*time.Second))
		r.sys.Shutdown()
		r.unmountAll()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, v := range r.violations {
			t.Errorf("violation: %s", v)
		}
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (r *rig) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func (r *rig) nodeDir(n cloud.NodeName) string { return filepath.Join(r.data, "nodes", string(n)) }

func (r *rig) layout(n cloud.NodeName) layout.Layout {
	l, err := layout.New(r.nodeDir(n))
	must(r.t, err)
	return l
}

// addNode creates the node's instance, registers it and starts its agent.
func (r *rig) addNode(names ...cloud.NodeName) {
	r.t.Helper()
	for _, n := range names {
		r.addNodeWith(n, nil)
	}
}

// addNodeWith is addNode with the agent's mounter wrapped (see startAgent).
func (r *rig) addNodeWith(n cloud.NodeName, wrap func(mount.Mounter) mount.Mounter) {
	r.t.Helper()
	r.cloud.AddInstance(n)
	must(r.t, r.ctl.ApplyNode(store.NodeSpec{Name: n}))
	r.startAgent(n, wrap)
}

// startAgent starts n's agent; wrap, if set, wraps its mounter (faults).
func (r *rig) startAgent(n cloud.NodeName, wrap func(mount.Mounter) mount.Mounter) {
	r.t.Helper()
	m := &checkMounter{Mounter: r.mounterOf(n), r: r, node: n, counts: map[string]int{}}
	r.mu.Lock()
	r.mounters[n] = m
	r.mu.Unlock()
	var use mount.Mounter = m
	if wrap != nil {
		use = wrap(m)
	}
	cfg := DefaultConfig()
	cfg.Node, cfg.DataDir, cfg.Clock, cfg.Log, cfg.Events = n, r.nodeDir(n), r.clk, r.log, r.rec
	cfg.Mounter = use
	cfg.Devices = SimDevices{Cloud: r.cloud, Node: n}
	cfg.Controller = r.ctl.Lookup().Node
	cfg.Guard = r.ctl.Guard()
	if r.calls[n] == nil {
		r.calls[n] = NewCalls()
	}
	cfg.Calls, cfg.OpTimeout, cfg.StopGrace = r.calls[n], r.opTimeout, r.stopGrace
	a, err := Start(r.sys, cfg, r.guardian)
	must(r.t, err)
	r.agents[n] = a
}

func (r *rig) volume(id cloud.VolumeID, mode cloud.AccessMode) {
	r.t.Helper()
	r.cloud.CreateVolume(id, mode)
	must(r.t, r.ctl.ApplyVolume(store.VolumeSpec{ID: id, Mode: mode}))
}

func (r *rig) workload(uid string, n cloud.NodeName, vols ...cloud.VolumeID) {
	r.t.Helper()
	must(r.t, r.ctl.ApplyWorkload(store.Workload{UID: uid, Node: n, Volumes: vols}))
}

// podPath is where workload uid sees vol on node n.
func (r *rig) podPath(n cloud.NodeName, uid string, vol cloud.VolumeID) string {
	p, err := r.layout(n).PodVolume(uid, "tether-sim", string(vol))
	must(r.t, err)
	return p
}

// mounted: the agent reports vol published for uid.
func (r *rig) mounted(n cloud.NodeName, uid string, vol cloud.VolumeID) func() bool {
	return func() bool {
		st, err := r.agents[n].Status(5 * time.Second)
		must(r.t, err)
		return slices.ContainsFunc(st.Mounts, func(m *messages.AgentMount) bool {
			return m.VolumeId == string(vol) && m.WorkloadUid == uid && m.State == "Mounted"
		})
	}
}

// clean: nothing mounted on node n and the agent reports nothing in use.
func (r *rig) clean(n cloud.NodeName) func() bool {
	return func() bool {
		st, err := r.agents[n].Status(5 * time.Second)
		must(r.t, err)
		if len(st.Mounts) > 0 || len(st.VolumesInUse) > 0 {
			return false
		}
		found, err := mount.Scan(r.layout(n), r.mounterOf(n))
		must(r.t, err)
		return len(found.Entries) == 0
	}
}

func (r *rig) eventually(what string, cond func() bool) {
	r.t.Helper()
	if !testkit.Until(10*time.Second, cond) {
		r.t.Fatalf("not within 10s: %s\ncloud: %v", what, r.cloud.Attachments())
	}
}

// advanceUntil moves the fake clock on by step until cond holds. A retry
// timer is armed by an actor some time after the failure that causes it, so
// one big advance can come before the timer exists and never fire it.
func (r *rig) advanceUntil(what string, step time.Duration, cond func() bool) {
	r.t.Helper()
	advanced := func() bool {
		if cond() {
			return true
		}
		r.clk.Advance(step)
		return false
	}
	if !testkit.Until(10*time.Second, advanced) {
		r.t.Fatalf("not within 10s, advancing the clock until: %s\ncloud: %v", what, r.cloud.Attachments())
	}
}

func (r *rig) events(kind events.Kind, name, typ string) []events.Event {
	var out []events.Event
	for _, e := range r.rec.For(events.Ref{Kind: kind, Name: name}) {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// mounterOf returns the real mounter of node n (one per node, stateless).
func (r *rig) mounterOf(n cloud.NodeName) mount.Mounter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.inner[n]; ok {
		return m
	}
	l, err := layout.New(r.nodeDir(n))
	must(r.t, err)
	m := mount.Default(l)
	r.t.Logf("node %s mounts with %s mounts", n, m.Name())
	r.inner[n] = m
	return m
}

// observe: a detach from an instance whose node still has the volume
// mounted (staged or published) breaks I2.
func (r *rig) observe(c sim.Change) {
	if c.Attached {
		return
	}
	r.mu.Lock()
	m, ok := r.inner[c.Node]
	r.mu.Unlock()
	if !ok {
		return
	}
	found, err := mount.Scan(r.layout(c.Node), m)
	if err != nil {
		r.violation("scan %s: %v", c.Node, err)
		return
	}
	for _, e := range found.Entries {
		if e.Volume == string(c.Volume) && e.State == mount.Mounted {
			r.violation("I2: %s detached from %s (%s) while %s %s is mounted", c.Volume, c.Node, c.Reason, e.Kind, e.Path)
		}
	}
}

// unmountAll removes every mount the test left, so that TempDir can go.
func (r *rig) unmountAll() {
	for n := range r.agents {
		if err := Teardown(r.nodeDir(n), r.mounterOf(n)); err != nil {
			r.t.Errorf("cleanup %s: %v", n, err)
		}
	}
}

// checkMounter counts operations and checks I3 against the cloud: a stage
// or publish happens only while the volume is attached to this node.
type checkMounter struct {
	mount.Mounter
	r      *rig
	node   cloud.NodeName
	mu     sync.Mutex
	counts map[string]int
}

// count records op in all and per volume ("stage" and "stage:v1").
func (m *checkMounter) count(op, target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[op]++
	m.counts[op+":"+filepath.Base(target)]++
}

func (m *checkMounter) Count(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[op]
}

func (m *checkMounter) attached(vol string) bool {
	inst, _ := m.r.cloud.InstanceOf(m.node)
	return slices.Contains(m.r.cloud.Attachments()[cloud.VolumeID(vol)], inst)
}

func (m *checkMounter) Stage(source, target string) error {
	m.count("stage", target)
	if vol := filepath.Base(target); !m.attached(vol) {
		m.r.violation("I3: stage of %s on %s while not attached there", vol, m.node)
	}
	return m.Mounter.Stage(source, target)
}

func (m *checkMounter) Publish(staged, target string, ro bool) error {
	m.count("publish", target)
	if vol := filepath.Base(target); !m.attached(vol) {
		m.r.violation("I3: publish of %s on %s while not attached there", vol, m.node)
	}
	return m.Mounter.Publish(staged, target, ro)
}

func (m *checkMounter) Unstage(target string) error {
	m.count("unstage", target)
	return m.Mounter.Unstage(target)
}

func (m *checkMounter) Unpublish(target string) error {
	m.count("unpublish", target)
	return m.Mounter.Unpublish(target)
}

// listAround lists every path under dir's parent, for "nothing outside the
// data directory was touched" checks.
func listAround(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(filepath.Dir(dir), func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	must(t, err)
	return out
}

// sendWorkloads hands an agent a desired state directly, bypassing the
// controller's validation (as a buggy or hostile controller could).
func sendWorkloads(r *rig, n cloud.NodeName, ws map[string][]string) {
	msg := &messages.NodeWorkloads{Node: string(n)}
	for uid, vols := range ws {
		w := &messages.WorkloadSpec{Uid: uid}
		for _, v := range vols {
			w.Volumes = append(w.Volumes, &messages.VolumeUse{VolumeId: v})
		}
		msg.Workloads = append(msg.Workloads, w)
	}
	r.sys.Root.Send(r.agents[n].PID(), msg)
}
