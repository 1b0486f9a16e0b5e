package bench

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/tether/tether/actors/runtime/heapstat"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// plain is truth as maps of slices per volume: what the compact truth
// must agree with.
type plain struct {
	attached  map[cloud.VolumeID][]cloud.NodeName
	published map[cloud.VolumeID][][2]string // node, path
	want      map[cloud.VolumeID]cloud.NodeName
}

func (p *plain) nodesPublished(v cloud.VolumeID) []cloud.NodeName {
	var out []cloud.NodeName
	for _, t := range p.published[v] {
		if n := cloud.NodeName(t[0]); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (p *plain) bad() []cloud.VolumeID {
	var out []cloud.VolumeID
	vols := map[cloud.VolumeID]bool{}
	for _, m := range []map[cloud.VolumeID]bool{keys(p.attached), keys(p.published), keys(p.want)} {
		maps.Copy(vols, m)
	}
	for v := range vols {
		n, wanted := p.want[v]
		a, pub := p.attached[v], p.nodesPublished(v)
		ok := len(a) == 0 && len(pub) == 0
		if wanted {
			ok = len(a) == 1 && a[0] == n && len(pub) == 1 && pub[0] == n
		}
		if !ok {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func (p *plain) twice() []cloud.VolumeID {
	var out []cloud.VolumeID
	for v, a := range p.attached {
		if len(a) > 1 {
			out = append(out, v)
		}
	}
	for v := range p.published {
		if len(p.nodesPublished(v)) > 1 && len(p.attached[v]) <= 1 {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func keys[V any](m map[cloud.VolumeID]V) map[cloud.VolumeID]bool {
	out := map[cloud.VolumeID]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// The compact truth agrees with the plain one on every random history
// of wants, attachments (on several nodes at once too), mounts (several
// per node, repeated, and undone), and snapshots: on what differs from
// what is wanted, on what describe shows of it, and on what is attached
// or mounted twice.
func TestTruthAgreesWithPlainModel(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 3))
		tr := newTruth()
		p := &plain{attached: map[cloud.VolumeID][]cloud.NodeName{}, published: map[cloud.VolumeID][][2]string{}, want: map[cloud.VolumeID]cloud.NodeName{}}
		vol := func() cloud.VolumeID { return cloud.VolumeID(fmt.Sprintf("v%d", rng.IntN(8))) }
		node := func() cloud.NodeName { return cloud.NodeName(fmt.Sprintf("n%d", rng.IntN(4))) }
		path := func(n cloud.NodeName, v cloud.VolumeID) string {
			return filepath.Join("/d/nodes", string(n), "pods", fmt.Sprintf("w%d", rng.IntN(2)), "volumes/tether-sim", string(v))
		}
		for step := range 300 {
			v, n := vol(), node()
			switch rng.IntN(6) {
			case 0:
				if rng.IntN(4) == 0 {
					n = ""
				}
				tr.setWant(v, n)
				if n == "" {
					delete(p.want, v)
				} else {
					p.want[v] = n
				}
			case 1:
				tr.observe(sim.Change{Volume: v, Node: n, Attached: true})
				if !slices.Contains(p.attached[v], n) {
					p.attached[v] = append(p.attached[v], n)
				}
			case 2:
				tr.observe(sim.Change{Volume: v, Node: n})
				if p.attached[v] = slices.DeleteFunc(p.attached[v], func(x cloud.NodeName) bool { return x == n }); len(p.attached[v]) == 0 {
					delete(p.attached, v)
				}
			case 3:
				at := path(n, v)
				tr.publish(n, at)
				if !slices.Contains(p.published[v], [2]string{string(n), at}) {
					p.published[v] = append(p.published[v], [2]string{string(n), at})
				}
			case 4:
				at := path(n, v)
				tr.unpublish(n, at)
				if p.published[v] = slices.DeleteFunc(p.published[v], func(x [2]string) bool { return x == [2]string{string(n), at} }); len(p.published[v]) == 0 {
					delete(p.published, v)
				}
			case 5:
				if rng.IntN(10) > 0 {
					continue
				}
				snap := map[cloud.VolumeID][]cloud.NodeName{}
				for range rng.IntN(4) {
					v, n := vol(), node()
					if !slices.Contains(snap[v], n) {
						snap[v] = append(snap[v], n)
					}
				}
				tr.load(snap)
				p.attached = snap
			}
			wantBad := p.bad()
			tr.mu.Lock()
			gotBad := slices.Sorted(maps.Keys(tr.bad))
			tr.mu.Unlock()
			if !slices.Equal(gotBad, wantBad) {
				t.Fatalf("seed %d step %d: differ %v, want %v", seed, step, gotBad, wantBad)
			}
			if ok, first := tr.matches(); ok != (len(wantBad) == 0) || (!ok && !slices.Contains(wantBad, first)) {
				t.Fatalf("seed %d step %d: matches = %v, %q; differ %v", seed, step, ok, first, wantBad)
			}
			if got, want := slices.Sorted(slices.Values(tr.twice())), p.twice(); !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: twice %v, want %v", seed, step, got, want)
			}
			for _, v := range wantBad {
				tr.mu.Lock()
				got := fmt.Sprintf("%q %v %v", tr.want[v], sorted(tr.attached[v]), sorted(nodesOf(tr.published[v])))
				tr.mu.Unlock()
				if want := fmt.Sprintf("%q %v %v", p.want[v], sorted(p.attached[v]), sorted(p.nodesPublished(v))); got != want {
					t.Fatalf("seed %d step %d: %s shows %s, want %s", seed, step, v, got, want)
				}
			}
		}
	}
}

func sorted(ns []cloud.NodeName) []cloud.NodeName { return slices.Sorted(slices.Values(ns)) }

// A volume at rest (wanted, attached and mounted on one node) costs the
// truth about 80 bytes (maps of slices per volume cost 380, its mount's
// path included): it lives in the heap the bench measures.
func TestTruthCostPerVolume(t *testing.T) {
	const n = 20000
	vols, paths := make([]cloud.VolumeID, n), make([]string, n)
	nodes := make([]cloud.NodeName, 100)
	for i := range nodes {
		nodes[i] = cloud.NodeName(fmt.Sprintf("node-%03d", i))
	}
	for i := range vols {
		vols[i] = cloud.VolumeID(volName(i))
		paths[i] = fmt.Sprintf("/tmp/tether-bench-1/nodes/%s/pods/%s/volumes/tether-sim/%s", nodes[i%len(nodes)], workName(i), vols[i])
	}
	before := heapstat.Live()
	tr := newTruth()
	// As in a fleet start: every volume differs at first.
	for i, v := range vols {
		tr.setWant(v, nodes[i%len(nodes)])
	}
	for i, v := range vols {
		tr.observe(sim.Change{Volume: v, Node: nodes[i%len(nodes)], Attached: true})
	}
	for i := range vols {
		tr.publish(nodes[i%len(nodes)], paths[i])
	}
	per := float64(int64(heapstat.Live())-int64(before)) / n
	if ok, v := tr.matches(); !ok {
		t.Fatalf("differs at %s", v)
	}
	runtime.KeepAlive(tr)
	runtime.KeepAlive(vols) // the callers' strings: not the truth's
	runtime.KeepAlive(paths)
	if per > 120 {
		t.Errorf("%.0f bytes per volume at rest, want at most 120", per)
	}
	t.Logf("%.0f bytes per volume at rest", per)
}
