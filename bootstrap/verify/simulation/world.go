package simulation

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// epoch is the virtual time a run starts at.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// bg is the context of every sim cloud call: the cloud has no latency, so
// nothing ever waits on it.
var bg = context.Background()

// world is one run: the cores, their shells, the cloud, the store, the
// disks, the clock and the queue of what happens next.
type world struct {
	cfg     Config
	seed    uint64
	now     time.Time
	q       queue
	seq     uint64
	plan    *plan
	tracing bool
	trace   []string

	cloud  *sim.Cloud
	st     *store.Memory
	nodeNs []cloud.NodeName
	volIDs []cloud.VolumeID
	modes  map[cloud.VolumeID]cloud.AccessMode
	vols   map[cloud.VolumeID]*volSim
	nodes  map[cloud.NodeName]*nodeSim
	agents map[cloud.NodeName]*agentSim
	disks  map[cloud.NodeName]*disk
	sync   *syncSim
	fifo   map[pair]time.Time

	partitions map[cloud.NodeName]time.Time // node -> end of its partition
	machines   map[cloud.NodeName]machine
	machineGen map[cloud.NodeName]int
	// nodeDeleted: the node is not in the desired state (deleteNode).
	nodeDeleted map[cloud.NodeName]bool
	outOfSvc    map[cloud.NodeName]bool
	// instCache is the controller process's node -> instance cache
	// (instances.go); ctrlEpoch numbers controller processes
	// (restartController).
	instCache map[cloud.NodeName]cloud.InstanceID
	ctrlEpoch uint64
	nextUID   int
	// reports numbers the agents' VolumesInUse reports; heard is, per
	// node, the highest number its node actors received (I3).
	reports uint64
	heard   map[cloud.NodeName]uint64

	chk         checker
	violations  []Violation
	steps       int
	kills       int
	faults      int
	forced      int // forced detaches that detached something
	calm        bool
	calmAt      time.Time
	end         time.Time
	convergedAt time.Time
}

func newWorld(seed uint64, cfg Config, f filter, tracing bool) *world {
	cfg = cfg.withBreak()
	w := &world{
		cfg: cfg, seed: seed, now: epoch, tracing: tracing,
		plan:  newPlan(seed, f),
		modes: map[cloud.VolumeID]cloud.AccessMode{}, vols: map[cloud.VolumeID]*volSim{},
		nodes: map[cloud.NodeName]*nodeSim{}, agents: map[cloud.NodeName]*agentSim{},
		disks: map[cloud.NodeName]*disk{}, fifo: map[pair]time.Time{},
		partitions: map[cloud.NodeName]time.Time{}, machines: map[cloud.NodeName]machine{},
		machineGen: map[cloud.NodeName]int{}, nodeDeleted: map[cloud.NodeName]bool{},
		outOfSvc: map[cloud.NodeName]bool{}, heard: map[cloud.NodeName]uint64{},
		instCache: map[cloud.NodeName]cloud.InstanceID{},
	}
	w.chk = checker{w: w, force: map[vn]bool{}, console: map[vn]bool{}, newest: map[cloud.NodeName]uint64{}, stale: map[cloud.NodeName]string{}}
	w.cloud = sim.New(sim.Config{BatchSize: cfg.BatchSize, Now: func() time.Time { return w.now }, Permissive: !cfg.StrictCloud})
	w.cloud.Observe(w.chk.observe)
	w.st = store.NewMemory()
	return w
}

// setup builds the cluster and schedules the cores' starts and the phases.
func (w *world) setup() {
	for i := 1; i <= w.cfg.Nodes; i++ {
		n := cloud.NodeName(fmt.Sprintf("n%d", i))
		w.nodeNs = append(w.nodeNs, n)
		w.cloud.AddInstance(n)
		must(w.st.PutNode(store.NodeSpec{Name: n}))
		w.nodes[n] = &nodeSim{w: w, name: n}
		w.agents[n] = &agentSim{w: w, node: n}
		w.disks[n] = newDisk()
	}
	for i := 1; i <= w.cfg.Volumes; i++ {
		v := cloud.VolumeID(fmt.Sprintf("v%d", i))
		mode := cloud.Exclusive
		if i > w.cfg.Volumes-w.cfg.MultiNode {
			mode = cloud.MultiNode
		}
		w.volIDs = append(w.volIDs, v)
		w.modes[v] = mode
		w.cloud.CreateVolume(v, mode)
		must(w.st.PutVolume(store.VolumeSpec{ID: v, Mode: mode}))
		w.vols[v] = &volSim{w: w, id: v}
	}
	initial := w.plan.site("initial workloads")
	for range w.cfg.InitialWorkloads {
		w.createWorkload(nil, []float64{initial.float(), initial.float(), initial.float(), initial.float()})
	}
	w.sync = &syncSim{w: w}
	s := w.plan.site("setup")
	for _, v := range w.volIDs {
		w.after(s.uniform(0, 100*time.Millisecond), w.vols[v].start)
	}
	for _, n := range w.nodeNs {
		w.after(s.uniform(0, 100*time.Millisecond), w.nodes[n].start)
		w.after(s.uniform(0, 100*time.Millisecond), w.agents[n].start)
	}
	w.after(s.uniform(0, 100*time.Millisecond), w.sync.start)
	w.scheduleChurn()
	w.scheduleFault()
	w.calmAt = epoch.Add(w.cfg.Churn)
	w.end = w.calmAt.Add(w.cfg.CalmDeadline())
	w.at(w.calmAt, w.beginCalm)
}

// run executes events until the end of the calm, the first violation or
// MaxSteps.
func (w *world) run() {
	w.setup()
	for w.q.Len() > 0 && len(w.violations) == 0 {
		e := heap.Pop(&w.q).(*event)
		if e.at.After(w.end) {
			break
		}
		w.now = e.at
		e.fn()
		w.steps++
		if w.steps >= w.cfg.MaxSteps {
			w.violate("Steps", "", "", fmt.Sprintf("no end after %d steps", w.steps))
		}
	}
	if len(w.violations) == 0 {
		w.now = w.end
		w.checkConverged(true)
	}
}

func (w *world) result() Result {
	r := Result{Seed: w.seed, Violations: w.violations, Trace: w.trace, Plan: w.plan.log,
		Steps: w.steps, Kills: w.kills, Faults: w.faults, ForceDetaches: w.forced, ConvergedAt: -1, End: w.now.Sub(epoch)}
	if !w.convergedAt.IsZero() {
		r.ConvergedAt = w.convergedAt.Sub(w.calmAt)
	}
	return r
}

func (w *world) actor(a addr) actorSim {
	switch a.k {
	case kVolume:
		return w.vols[cloud.VolumeID(a.name)]
	case kNode:
		return w.nodes[cloud.NodeName(a.name)]
	case kAgent:
		return w.agents[cloud.NodeName(a.name)]
	case kSync:
		return w.sync
	}
	return apiSim{}
}

// apiSim stands for the desired-state writer: always there.
type apiSim struct{}

func (apiSim) incarnation() uint64 { return 1 }
func (apiSim) isAlive() bool       { return true }
func (apiSim) receive(addr, any)   {}

func (w *world) tracef(format string, args ...any) {
	if !w.tracing {
		return
	}
	w.trace = append(w.trace, w.stamp()+" "+fmt.Sprintf(format, args...))
}

func (w *world) stamp() string { return fmt.Sprintf("%9.3fs", w.now.Sub(epoch).Seconds()) }

// instance is the ground truth: the instance backing n now ("" if none).
// The shells resolve through their cache instead (resolve).
func (w *world) instance(n cloud.NodeName) cloud.InstanceID {
	id, _ := w.cloud.InstanceOf(n)
	return id
}

func (w *world) partitioned(n cloud.NodeName) bool {
	end, ok := w.partitions[n]
	return ok && w.now.Before(end)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("simulation: %v", err))
	}
}
