package bench

import (
	"os"
	"testing"
)

// A phase's store requests are etcd's counters' differences: every
// service's, KV's apart, per document only where the phase applied some.
func TestStoreRequests(t *testing.T) {
	before := etcdStats{requests: map[string]float64{"KV.Range": 10, "KV.Txn": 5, "Lease.LeaseKeepAlive": 3}}
	after := etcdStats{requests: map[string]float64{"KV.Range": 30, "KV.Txn": 25, "Lease.LeaseKeepAlive": 5, "Watch.Watch": 1}}
	sr := storeRequests(before, after, 20, 10)
	if sr.Total != 43 || sr.KV != 40 || sr.PerVolume != 4.3 {
		t.Errorf("total %d, kv %d, per volume %g: want 43, 40, 4.3", sr.Total, sr.KV, sr.PerVolume)
	}
	if sr.PerDocument == nil || *sr.PerDocument != 2.15 || sr.KVPerDocument == nil || *sr.KVPerDocument != 2 {
		t.Errorf("per document %v, KV per document %v: want 2.15 and 2", sr.PerDocument, sr.KVPerDocument)
	}
	if want := map[string]int64{"KV.Range": 20, "KV.Txn": 20, "Lease.LeaseKeepAlive": 2, "Watch.Watch": 1}; len(sr.ByMethod) != len(want) {
		t.Errorf("by method %v, want %v", sr.ByMethod, want)
	} else {
		for m, n := range want {
			if sr.ByMethod[m] != n {
				t.Errorf("%s: %d, want %d", m, sr.ByMethod[m], n)
			}
		}
	}
	if none := storeRequests(before, after, 0, 10); none.PerDocument != nil || none.KVPerDocument != nil {
		t.Errorf("a phase of no documents has per-document figures: %v %v", none.PerDocument, none.KVPerDocument)
	}
}

// A member slot's figures add up across its processes: the counters of
// one retired before its kill, then its successor's from zero; a process
// that died unretired (its successor seen at the end) counts from zero too.
func TestMemberTrackAcrossRestarts(t *testing.T) {
	tr := &memberTrack{base: []memberSample{{pid: 1, cloudCalls: map[string]float64{"attach": 5}, cpuSeconds: 2}}, acc: []memberAcc{{cloudCalls: map[string]float64{}}}}
	tr.add(0, memberSample{pid: 1, cloudCalls: map[string]float64{"attach": 8}, cpuSeconds: 3, peakRSS: 100})
	tr.base[0] = memberSample{} // retired: its successor starts at zero
	tr.add(0, memberSample{pid: 2, cloudCalls: map[string]float64{"attach": 4}, cpuSeconds: 0.5, peakRSS: 300})
	a := tr.acc[0]
	if a.cloudCalls["attach"] != 7 || a.cpuSeconds != 1.5 || a.peakRSS != 300 {
		t.Errorf("attach %g, cpu %g, peak %d: want 7, 1.5, 300", a.cloudCalls["attach"], a.cpuSeconds, a.peakRSS)
	}
	tr = &memberTrack{base: []memberSample{{pid: 1, cloudCalls: map[string]float64{"attach": 5}, cpuSeconds: 2}}, acc: []memberAcc{{cloudCalls: map[string]float64{}}}}
	tr.add(0, memberSample{pid: 9, cloudCalls: map[string]float64{"attach": 3}, cpuSeconds: 1})
	if a := tr.acc[0]; a.cloudCalls["attach"] != 3 || a.cpuSeconds != 1 {
		t.Errorf("a successor's own counters: attach %g, cpu %g, want 3 and 1", a.cloudCalls["attach"], a.cpuSeconds)
	}
	// A member that joined again within its process: same process, its
	// metrics anew.
	tr = &memberTrack{base: []memberSample{{pid: 1, cloudCalls: map[string]float64{"attach": 50}, cpuSeconds: 2}}, acc: []memberAcc{{cloudCalls: map[string]float64{}}}}
	tr.add(0, memberSample{pid: 1, cloudCalls: map[string]float64{"attach": 20}, cpuSeconds: 5})
	if a := tr.acc[0]; a.cloudCalls["attach"] != 20 || a.cpuSeconds != 3 {
		t.Errorf("after a rejoin within the process: attach %g, cpu %g, want 20 and 3", a.cloudCalls["attach"], a.cpuSeconds)
	}
}

// procStat reads this very process: some CPU time, a peak RSS.
func TestProcStat(t *testing.T) {
	x := 0
	for i := range 50_000_000 { // some CPU time
		x += i
	}
	cpu, rss := procStat(os.Getpid())
	if cpu <= 0 || rss <= 0 {
		t.Fatalf("cpu %g s, peak RSS %d bytes (x %d): want both positive", cpu, rss, x)
	}
}
