package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tether/tether/bootstrap/process/distributed"
)

// What the distributed side counts, each from its source: etcd's own
// /metrics (the requests it handled, its WAL fsyncs, the leases it
// expired), each member's /metrics (its cloud calls and its volume
// actors' attachment states), each member's /proc entry (CPU time, peak
// RSS) and each member's log (a lost lease says so there).

// scrape reads a Prometheus text endpoint into its families.
func scrape(ctx context.Context, url string) (map[string]*dto, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	out := map[string]*dto{}
	for name, f := range fams {
		d := &dto{}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Histogram != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			}
			d.samples = append(d.samples, sample{labels, v})
		}
		out[name] = d
	}
	return out, nil
}

// dto is one metric family's samples (histograms: their counts).
type dto struct{ samples []sample }

type sample struct {
	labels map[string]string
	value  float64
}

// sum adds up the samples of name, keyed by key(labels) ("" drops one).
func sum(fams map[string]*dto, name string, key func(map[string]string) string) map[string]float64 {
	out := map[string]float64{}
	if f := fams[name]; f != nil {
		for _, s := range f.samples {
			if k := key(s.labels); k != "" {
				out[k] += s.value
			}
		}
	}
	return out
}

// etcdStats are etcd's counters at one moment.
type etcdStats struct {
	// requests by "Service.Method": every request message etcd's gRPC
	// server received for its KV, Lease and Watch services (a unary call
	// is one; a stream counts each message: a watch created or cancelled,
	// a lease kept alive).
	requests      map[string]float64
	fsyncs        float64 // WAL fsyncs
	leasesExpired float64
}

// etcdServices are the services whose requests count as store requests.
var etcdServices = map[string]string{"etcdserverpb.KV": "KV", "etcdserverpb.Lease": "Lease", "etcdserverpb.Watch": "Watch"}

func readEtcd(ctx context.Context, endpoint string) (etcdStats, error) {
	fams, err := scrape(ctx, endpoint+"/metrics")
	if err != nil {
		return etcdStats{}, fmt.Errorf("etcd's metrics: %w", err)
	}
	st := etcdStats{requests: sum(fams, "grpc_server_msg_received_total", func(l map[string]string) string {
		if svc, ok := etcdServices[l["grpc_service"]]; ok {
			return svc + "." + l["grpc_method"]
		}
		return ""
	})}
	if _, ok := fams["grpc_server_msg_received_total"]; !ok {
		return st, fmt.Errorf("etcd's metrics at %s have no grpc_server_msg_received_total", endpoint)
	}
	all := func(map[string]string) string { return "all" }
	st.fsyncs = sum(fams, "etcd_disk_wal_fsync_duration_seconds", all)["all"]
	st.leasesExpired = sum(fams, "etcd_debugging_server_lease_expired_total", all)["all"]
	return st, nil
}

// storeRequests is since - before, as a phase reports it.
func storeRequests(before, after etcdStats, docs, volumes int) StoreRequests {
	sr := StoreRequests{ByMethod: map[string]int64{}}
	for m, v := range after.requests {
		if d := int64(v - before.requests[m]); d > 0 {
			sr.ByMethod[m] = d
			sr.Total += d
			if strings.HasPrefix(m, "KV.") {
				sr.KV += d
			}
		}
	}
	sr.PerVolume = float64(sr.Total) / float64(volumes)
	if docs > 0 {
		pd, kv := float64(sr.Total)/float64(docs), float64(sr.KV)/float64(docs)
		sr.PerDocument, sr.KVPerDocument = &pd, &kv
	}
	return sr
}

// memberSample is what one member process shows at one moment.
type memberSample struct {
	pid        int
	cloudCalls map[string]float64 // by method
	states     map[string]float64 // the volume actors' attachments by state
	cpuSeconds float64
	peakRSS    int64 // VmHWM: since the last resetPeak
	unread     error // its metrics could not be read (cloudCalls, states nil)
}

// sampleMember reads member i's metrics and /proc entry; ok is false if
// it does not run.
func sampleMember(ctx context.Context, f *distributed.Fleet, i int) (memberSample, bool, error) {
	pid, maddr, _, ok := f.ControllerDebug(i)
	if !ok {
		return memberSample{}, false, nil
	}
	s := memberSample{pid: pid}
	s.cpuSeconds, s.peakRSS = procStat(pid)
	fams, err := scrape(ctx, "http://"+maddr+"/metrics")
	if err != nil {
		// A member that lost its lease joins again within its process,
		// its endpoints down meanwhile: said, not fatal.
		s.unread = fmt.Errorf("controller-%d: %w", i, err)
		return s, true, nil
	}
	s.cloudCalls = sum(fams, "tether_cloud_calls_total", func(l map[string]string) string { return l["method"] })
	s.states = sum(fams, "tether_attachments", func(l map[string]string) string { return l["state"] })
	return s, true, nil
}

// procStat reads a process's CPU time (user and system) and its peak RSS
// (VmHWM) from /proc; zeros where it cannot.
func procStat(pid int) (cpuSeconds float64, peakRSS int64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The fields after the command's name, which is in parentheses
		// and may hold spaces: utime and stime are the 14th and 15th.
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				s, _ := strconv.ParseFloat(f[12], 64)
				cpuSeconds = (u + s) / clockTicks
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				peakRSS = kb * 1024
			}
		}
	}
	return cpuSeconds, peakRSS
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// resetPeak starts a process's peak RSS over from its current RSS
// (clear_refs 5): each phase reports its own peak.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// memberTrack adds up each member slot's counters over a phase, across
// the processes that held the slot (restart kills them and starts new
// ones, whose counters start at zero).
type memberTrack struct {
	f    *distributed.Fleet
	base []memberSample // at the phase's start, or the slot's new process: zero
	acc  []memberAcc
	// unread: the members whose metrics could not be read at some point
	// (their cloud calls over the phase are not exact).
	unread []string
}

type memberAcc struct {
	cloudCalls map[string]float64
	cpuSeconds float64
	peakRSS    int64
}

func newMemberTrack(ctx context.Context, f *distributed.Fleet) (*memberTrack, error) {
	t := &memberTrack{f: f, base: make([]memberSample, f.Controllers()), acc: make([]memberAcc, f.Controllers())}
	for i := range t.base {
		s, ok, err := sampleMember(ctx, f, i)
		if err != nil {
			return nil, err
		}
		if ok {
			resetPeak(s.pid)
		}
		t.note(s)
		t.base[i] = s
		t.acc[i].cloudCalls = map[string]float64{}
	}
	return t, nil
}

// retire adds member i's process's counters up to now (before it is
// killed); its next process starts from zero.
func (t *memberTrack) retire(ctx context.Context, i int) error {
	s, ok, err := sampleMember(ctx, t.f, i)
	if err != nil || !ok {
		return err
	}
	t.add(i, s)
	t.base[i] = memberSample{}
	return nil
}

func (t *memberTrack) note(s memberSample) {
	if s.unread != nil {
		t.unread = append(t.unread, s.unread.Error())
	}
}

func (t *memberTrack) add(i int, s memberSample) {
	t.note(s)
	a, b := &t.acc[i], t.base[i]
	if b.pid != 0 && b.pid != s.pid {
		b = memberSample{} // a process started since (not retired: it died)
	}
	calls := b.cloudCalls
	for m, v := range s.cloudCalls {
		if v < calls[m] {
			// Counters that went back: the member lost its lease and
			// joined again within its process, metrics anew (what it
			// counted since the phase began, before, is lost).
			calls = nil
		}
	}
	for m, v := range s.cloudCalls {
		a.cloudCalls[m] += v - calls[m]
	}
	a.cpuSeconds += s.cpuSeconds - b.cpuSeconds
	a.peakRSS = max(a.peakRSS, s.peakRSS)
}

// end adds every member's counters up to now and returns the phase's
// figures: each member's, and the cloud calls of all.
func (t *memberTrack) end(ctx context.Context) ([]ProcStats, map[string]int, error) {
	calls := map[string]int{}
	var out []ProcStats
	for i := range t.acc {
		s, ok, err := sampleMember(ctx, t.f, i)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			t.add(i, s)
		}
		a := t.acc[i]
		for m, v := range a.cloudCalls {
			if v > 0 {
				calls[m] += int(v)
			}
		}
		out = append(out, ProcStats{Name: fmt.Sprintf("controller-%d", i), CPUSeconds: a.cpuSeconds, PeakRSSBytes: a.peakRSS})
	}
	return out, calls, nil
}

// attachedActors sums the members' volume actors' attachments by state.
func attachedActors(ctx context.Context, f *distributed.Fleet) (map[string]float64, error) {
	out := map[string]float64{}
	for i := range f.Controllers() {
		s, ok, err := sampleMember(ctx, f, i)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("controller-%d is not running", i)
		}
		if s.unread != nil {
			return nil, s.unread
		}
		for k, v := range s.states {
			out[k] += v
		}
	}
	return out, nil
}

// lostLease is what a member logs when its lease lapsed
// (distributed.membership's keepAlive).
const lostLease = "lost its etcd lease"

// leaseLapses counts the lapses every member has logged so far.
func leaseLapses(f *distributed.Fleet) int {
	n := 0
	for i := range f.Controllers() {
		b, err := os.ReadFile(f.LogPath(fmt.Sprintf("controller-%d", i)))
		if err == nil {
			n += bytes.Count(b, []byte(lostLease))
		}
	}
	return n
}

// profiles takes a CPU profile of every member over a phase
// (DistConfig.MemberProfiles), through its profiling endpoint.
type profiles struct {
	dir string
	f   *distributed.Fleet
}

// begin starts a profile in every member running (one running already
// goes on; one that cannot be reached has none to give at the end).
func (p profiles) begin(ctx context.Context) {
	if p.dir == "" {
		return
	}
	for i := range p.f.Controllers() {
		if _, _, addr, ok := p.f.ControllerDebug(i); ok {
			if resp, err := post(ctx, "http://"+addr+"/debug/cpuprofile/start"); err == nil {
				resp.Body.Close()
			}
		}
	}
}

// end writes every member's profile to dir/<phase>.controller-<i>.pprof;
// lost names the members that had none to give (one that lost its lease
// joins again within its process, its profiling endpoint anew).
func (p profiles) end(ctx context.Context, phase string) (lost []string, err error) {
	if p.dir == "" {
		return nil, nil
	}
	for i := range p.f.Controllers() {
		_, _, addr, ok := p.f.ControllerDebug(i)
		if !ok {
			continue
		}
		resp, err := post(ctx, "http://"+addr+"/debug/cpuprofile/stop")
		if err != nil {
			lost = append(lost, fmt.Sprintf("controller-%d (%v)", i, err))
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			lost = append(lost, fmt.Sprintf("controller-%d (%s %s)", i, resp.Status, bytes.TrimSpace(b)))
			continue
		}
		if err := os.WriteFile(filepath.Join(p.dir, fmt.Sprintf("%s.controller-%d.pprof", phase, i)), b, 0o644); err != nil {
			return lost, err
		}
	}
	return lost, nil
}

func post(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}
