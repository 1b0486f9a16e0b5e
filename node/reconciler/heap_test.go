package reconciler

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tether/tether/actors/runtime/heapstat"
)

// restFleet drives agents machines to rest, each with perNode volumes, one
// workload each (as tether bench), through what the shell would see: the
// desired state growing over a few snapshots, statuses echoing every
// report with all wanted volumes attached, and every operation succeeding.
// The names are made first: in tether they belong to the messages.
type restFleet struct {
	now    time.Time
	agents []*Agent
	names  [][]Workload
	devs   []string // device paths, by volume index
	cfg    Config
}

func newRestFleet(agents, perNode int) *restFleet {
	f := &restFleet{now: t0, cfg: DefaultConfig()}
	f.cfg.OpTimeout = 2 * time.Minute
	for n := range agents {
		var ws []Workload
		for i := range perNode {
			ws = append(ws, Workload{UID: fmt.Sprintf("n%d-w%d", n, i), Volumes: []Use{{Volume: VolumeID(fmt.Sprintf("n%d-v%d", n, i))}}})
		}
		f.names = append(f.names, ws)
	}
	for i := range perNode {
		f.devs = append(f.devs, fmt.Sprintf("/dev/xvd%d", i))
	}
	return f
}

// run brings every agent to rest.
func (f *restFleet) run(tb testing.TB) {
	for n, ws := range f.names {
		a := New(f.cfg, uint64(n)<<32)
		f.agents = append(f.agents, a)
		var ops []OpDone
		var reports []ReportInUse
		do := func(ev Event) {
			for _, e := range a.Step(f.now, ev) {
				switch e := e.(type) {
				case ReportInUse:
					reports = append(reports, e)
				case Stage:
					ops = append(ops, OpDone{Volume: e.Volume, Op: e.Op})
				case Publish:
					ops = append(ops, OpDone{Volume: e.Volume, Op: e.Op})
				case Unstage, Unpublish:
					tb.Fatalf("unexpected %T", e)
				}
			}
		}
		do(Restored{})
		// The desired state arrives in three snapshots, as workloads are
		// applied.
		for i, cut := range []int{len(ws) / 3, 2 * len(ws) / 3, len(ws)} {
			do(DesiredChanged{Workloads: ws[:cut], Revision: uint64(i + 1)})
		}
		for len(reports)+len(ops) > 0 {
			if len(reports) > 0 {
				r := reports[0]
				reports = reports[1:]
				st := StatusChanged{Attached: map[VolumeID]string{}, InUse: map[VolumeID]bool{}, InUseSeq: r.Seq}
				for i, v := range r.Volumes {
					st.Attached[v] = f.devs[i]
					st.InUse[v] = true
				}
				do(st)
				continue
			}
			op := ops[0]
			ops = ops[1:]
			do(op)
		}
		do(Tick{})
		if st := a.Status(); len(st.Mounts) != 2*len(ws) || len(st.InUse) != len(ws) {
			tb.Fatalf("agent %d not at rest: %+v", n, st)
		}
	}
}

// heapPerVolume is the live heap the machines keep at rest, per volume.
func heapPerVolume(tb testing.TB, agents, perNode int) float64 {
	f := newRestFleet(agents, perNode)
	before := heapstat.Live()
	f.run(tb)
	after := heapstat.Live()
	runtime.KeepAlive(f)
	return float64(int64(after)-int64(before)) / float64(agents*perNode)
}

// The machines keep ~255 bytes per volume at rest (one workload each, ten
// per node); they kept ~870 with maps of maps, cloned status maps and the
// room of emptied maps. The bound leaves room for noise, not for those.
func TestHeapAtRest(t *testing.T) {
	const bound = 400
	if got := heapPerVolume(t, 200, 10); got > bound {
		t.Errorf("machines at rest keep %.0f bytes per volume, want at most %d", got, bound)
	} else {
		t.Logf("%.0f bytes per volume at rest", got)
	}
}

// BenchmarkHeapAtRest reports the machines' live heap per volume at rest
// (go test -run '^$' -bench HeapAtRest ./node/reconciler).
func BenchmarkHeapAtRest(b *testing.B) {
	for _, shape := range []struct{ agents, perNode int }{{1000, 10}, {100, 100}} {
		b.Run(fmt.Sprintf("%dx%d", shape.agents, shape.perNode), func(b *testing.B) {
			var sum float64
			for range b.N {
				sum += heapPerVolume(b, shape.agents, shape.perNode)
			}
			b.ReportMetric(sum/float64(b.N), "B/volume")
		})
	}
}

// BenchmarkToRest measures the machines' steps from nothing to rest (100
// agents, ten volumes each): the pure core's share of a fleet start, which
// runs reconcile at every step (go test -run '^$' -bench ToRest
// ./node/reconciler).
func BenchmarkToRest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newRestFleet(100, 10).run(b)
	}
}
