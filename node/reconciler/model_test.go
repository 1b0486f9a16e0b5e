package reconciler

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

// The machine keeps its state in compact forms (mounts, seen, the desired
// slices and their index) where it kept maps. These tests drive each form
// and the maps it replaced with the same random changes and check that
// they always tell the same.

// mounts against a map of stages and one of publishes.
func TestMountsAsMaps(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	vols := []VolumeID{"a", "b", "c"}
	uids := []string{"w1", "w2", "w3"}
	for run := range 300 {
		m := newMounts()
		stages, pubs := map[VolumeID]MountState{}, map[PubKey]MountState{}
		for step := range 60 {
			v, uid := vols[rng.Intn(len(vols))], uids[rng.Intn(len(uids))]
			s := MountState(1 + rng.Intn(3))
			var did string
			switch rng.Intn(4) {
			case 0:
				m.setStage(v, s)
				stages[v] = s
				did = fmt.Sprintf("setStage(%s, %s)", v, s)
			case 1:
				m.deleteStage(v)
				delete(stages, v)
				did = fmt.Sprintf("deleteStage(%s)", v)
			case 2:
				m.setPub(PubKey{uid, v}, s)
				pubs[PubKey{uid, v}] = s
				did = fmt.Sprintf("setPub(%s/%s, %s)", uid, v, s)
			default:
				m.deletePub(PubKey{uid, v})
				delete(pubs, PubKey{uid, v})
				did = fmt.Sprintf("deletePub(%s/%s)", uid, v)
			}
			where := fmt.Sprintf("run %d step %d, after %s", run, step, did)
			checkMounts(t, where, &m, stages, pubs, vols, uids)
		}
	}
}

func checkMounts(t *testing.T, where string, m *mounts, stages map[VolumeID]MountState, pubs map[PubKey]MountState, vols []VolumeID, uids []string) {
	t.Helper()
	for _, v := range vols {
		if got, want := m.stage(v), stages[v]; got != want {
			t.Fatalf("%s: stage(%s) = %v, want %v", where, v, got, want)
		}
		var want []PubKey
		for _, uid := range uids {
			k := PubKey{uid, v}
			if got := m.pub(k); got != pubs[k] {
				t.Fatalf("%s: pub(%v) = %v, want %v", where, k, got, pubs[k])
			}
			if _, ok := pubs[k]; ok {
				want = append(want, k)
			}
		}
		if got := m.pubsOf(v); !slices.Equal(got, want) {
			t.Fatalf("%s: pubsOf(%s) = %v, want %v", where, v, got, want)
		}
	}
	var got, want []string
	m.all(func(v VolumeID, uid string, s MountState) { got = append(got, fmt.Sprintf("%s/%s=%s", v, uid, s)) })
	for v, s := range stages {
		want = append(want, fmt.Sprintf("%s/=%s", v, s))
	}
	for k, s := range pubs {
		want = append(want, fmt.Sprintf("%s/%s=%s", k.Volume, k.UID, s))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: all = %v, want %v", where, got, want)
	}
	for v, e := range m.byVol {
		if e.stage == 0 && e.pub == 0 {
			t.Fatalf("%s: an empty entry for %s is kept", where, v)
		}
	}
	if m.more != nil && len(m.more) == 0 {
		t.Fatalf("%s: an empty map of further publishes is kept", where)
	}
}

// seen against the status's two maps.
func TestSeenAsMaps(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	vols := []VolumeID{"a", "b", "c", "d"}
	status := func() StatusChanged {
		if rng.Intn(10) == 0 {
			return StatusChanged{}
		}
		e := StatusChanged{Attached: map[VolumeID]string{}, InUse: map[VolumeID]bool{}}
		for _, v := range vols {
			if rng.Intn(2) == 0 {
				e.Attached[v] = fmt.Sprintf("/dev/%d", rng.Intn(2))
			}
			if rng.Intn(2) == 0 {
				e.InUse[v] = rng.Intn(3) != 0
			}
		}
		return e
	}
	for run := range 2000 {
		e, other := status(), status()
		s := seenFrom(e)
		for _, v := range vols {
			d, attached := e.Attached[v]
			if got := s.of(v); got.attached != attached || got.device != d || got.inUse != e.InUse[v] {
				t.Fatalf("run %d: of(%s) = %+v, want attached %v at %q, in use %v (status %+v)", run, v, got, attached, d, e.InUse[v], e)
			}
		}
		if !s.same(e) {
			t.Fatalf("run %d: not the same as the status it was built from: %+v", run, e)
		}
		if got, want := s.same(other), maps.Equal(e.Attached, other.Attached) && maps.Equal(inUseSet(e), inUseSet(other)); got != want {
			t.Fatalf("run %d: same = %v, want %v (%+v, %+v)", run, got, want, e, other)
		}
	}
}

func inUseSet(e StatusChanged) map[VolumeID]bool {
	out := map[VolumeID]bool{}
	for v, u := range e.InUse {
		if u {
			out[v] = true
		}
	}
	return out
}

// The desired slices and their index against the maps they replaced:
// workloads by UID (the last of a UID named twice wins) and the map of
// maps, volume -> UID -> read-only.
func TestDesiredAsMaps(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	vols := []VolumeID{"a", "b", "c", "d"}
	uids := []string{"w1", "w2", "w3", "w4"}
	for run := range 500 {
		a := New(DefaultConfig(), 0)
		since := map[string]time.Time{}
		now := t0
		for step := range 10 {
			now = now.Add(time.Second)
			var e DesiredChanged
			for range rng.Intn(6) {
				w := Workload{UID: uids[rng.Intn(len(uids))]}
				for range rng.Intn(4) {
					w.Volumes = append(w.Volumes, Use{Volume: vols[rng.Intn(len(vols))], ReadOnly: rng.Intn(2) == 0})
				}
				e.Workloads = append(e.Workloads, w)
			}
			byUID := map[string]Workload{}
			for _, w := range e.Workloads {
				byUID[w.UID] = w
			}
			wanted := map[VolumeID]map[string]bool{}
			for uid, w := range byUID {
				for _, u := range w.Volumes {
					if wanted[u.Volume] == nil {
						wanted[u.Volume] = map[string]bool{}
					}
					wanted[u.Volume][uid] = u.ReadOnly
				}
			}
			for uid := range since {
				if _, ok := byUID[uid]; !ok {
					delete(since, uid)
				}
			}
			for uid := range byUID {
				if _, ok := since[uid]; !ok {
					since[uid] = now
				}
			}
			a.Step(now, e)
			where := fmt.Sprintf("run %d step %d (%+v)", run, step, e.Workloads)
			if len(a.desired) != len(byUID) {
				t.Fatalf("%s: %d workloads desired, want %d", where, len(a.desired), len(byUID))
			}
			for i, d := range a.desired {
				if i > 0 && strings.Compare(a.desired[i-1].uid, d.uid) >= 0 {
					t.Fatalf("%s: workloads out of order: %v", where, a.desired)
				}
				if !d.since.Equal(since[d.uid]) {
					t.Fatalf("%s: %s since %v, want %v", where, d.uid, d.since, since[d.uid])
				}
				var vs []VolumeID
				for _, u := range a.uses[d.lo:d.hi] {
					vs = append(vs, u.vol)
					if ro, ok := wanted[u.vol][d.uid]; !ok || ro != u.ro || a.desired[u.w].uid != d.uid {
						t.Fatalf("%s: %s uses %+v, want read-only %v", where, d.uid, u, ro)
					}
				}
				if !slices.IsSorted(vs) || len(slices.Compact(slices.Clone(vs))) != len(vs) {
					t.Fatalf("%s: uses of %s not by volume, each once: %v", where, d.uid, vs)
				}
			}
			index := a.wantedBy()
			for _, v := range vols {
				var got, want []string
				for _, i := range a.usersOf(index, v) {
					got = append(got, fmt.Sprintf("%s ro=%v", a.desired[a.uses[i].w].uid, a.uses[i].ro))
				}
				for _, uid := range slices.Sorted(maps.Keys(wanted[v])) {
					want = append(want, fmt.Sprintf("%s ro=%v", uid, wanted[v][uid]))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: users of %s %v, want %v", where, v, got, want)
				}
				for _, uid := range uids {
					if _, ok := wanted[v][uid]; a.wants(a.usersOf(index, v), uid) != ok {
						t.Fatalf("%s: wants(%s, %s) = %v", where, v, uid, !ok)
					}
				}
			}
		}
	}
}
