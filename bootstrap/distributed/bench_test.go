package distributed_test

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/api"
	"github.com/tether/tether/bootstrap/bench"
	"github.com/tether/tether/bootstrap/distributed"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// BenchmarkFleetStart runs one shape on both sides: V volumes over
// -fleet.nodes nodes (default 100: 100 agent processes on the distributed
// side, about 30 MB each, 3 GB), every sim instance with the attach limit
// fleetAttachLimit gives, the same for every size. The limit is what
// tether bench needs at the largest size (bench.PeakPerNode, which
// bench.Validate checks): a node's share of the volumes, and during the
// embedded side's churn phase (every tenth workload to the next node) the
// volumes moving onto it. With 100 nodes and 10,000 volumes that is 200:
// 100 each, and node 1 (11, 21, ...) takes all of node 0's (10's, ...),
// every one of them a tenth workload. The embedded side gets it through
// bench.Config.AttachLimit, the distributed side's cloud through `tether
// cloud serve --attach-limit` (FleetConfig.AttachLimit); the distributed
// side has no churn, but the same limit keeps the shapes equal. (At the
// sim's default limit, 39, 10,000 volumes needed 271 nodes: 271 agent
// processes, 8 GB.)
var (
	fleetNodes    = flag.Int("fleet.nodes", 100, "BenchmarkFleetStart: nodes (agent processes) on both sides")
	fleetDeadline = flag.Duration("fleet.deadline", 10*time.Minute, "BenchmarkFleetStart: how long the distributed fleet start may take before the benchmark fails")
	fleetKeep     = flag.Bool("fleet.keep", false, "BenchmarkFleetStart: keep the distributed fleet's directory (every process's log) after a run that succeeded")
)

// BenchmarkFleetStart: the time from one apply of V volumes and V
// workloads (one volume each, workload i on node i mod N) until every
// volume is attached to its node's instance and mounted there, in the
// one-process runtime (tether bench's fleet_start phase) and in a
// distributed fleet (3 controller members, one agent process per node,
// etcd, the cloud service: every part its own process on loopback), each
// size both ways in one run.
//
//	go test -run '^$' -bench FleetStart -benchtime 1x -timeout 90m ./bootstrap/distributed/
//
// ns/op and fleet_start_s are the fleet start alone (the embedded side's
// other phases and the fleets' starts and stops are outside them);
// ratio_to_embedded is distributed over embedded for the same V in the
// same run. The distributed side also reports apply_s (the apply call's
// return), attached_s (every volume attached, mounts pending) and
// etcd_calls/doc (etcd's KV calls during the apply, per document), and
// logs the apply's timeline as the ground truth shows it. Members have no
// pprof: where their time goes is in their logs and etcd's counters,
// under the fleet's directory (logs/, etcd-metrics-end.txt), which a
// failed run keeps, and -fleet.keep any run.
func BenchmarkFleetStart(b *testing.B) {
	limit := fleetAttachLimit()
	for _, v := range fleetSizes {
		b.Run(fmt.Sprintf("volumes=%d", v), func(b *testing.B) {
			var embedded float64
			b.Run("embedded", func(b *testing.B) { embedded = embeddedStart(b, v, limit) })
			b.Run("distributed", func(b *testing.B) {
				s := distributedStart(b, v, limit)
				if embedded > 0 {
					b.ReportMetric(s/embedded, "ratio_to_embedded")
				}
			})
		})
	}
}

// fleetSizes are BenchmarkFleetStart's volume counts.
var fleetSizes = []int{1000, 3000, 10000}

// fleetAttachLimit is the attach limit of every sim instance of
// BenchmarkFleetStart, both sides: what tether bench needs for the largest
// size over -fleet.nodes nodes, churn included.
func fleetAttachLimit() int {
	return bench.PeakPerNode(slices.Max(fleetSizes), *fleetNodes)
}

// embeddedStart runs tether bench (all its phases: it has no option to
// stop after the first) b.N times and reports its fleet_start seconds.
func embeddedStart(b *testing.B, volumes, attachLimit int) float64 {
	cfg := bench.DefaultConfig()
	cfg.Volumes, cfg.Nodes, cfg.AttachLimit, cfg.Dir = volumes, *fleetNodes, attachLimit, b.TempDir()
	var total float64
	for range b.N {
		res, err := bench.Run(context.Background(), cfg)
		if res == nil || len(res.Phases) == 0 {
			b.Fatal(err)
		}
		if err != nil { // a later phase: the fleet start stands
			b.Logf("embedded: tether bench failed after its fleet start: %v", err)
		}
		p := res.Phases[0]
		b.Logf("embedded, %d volumes over %d nodes (attach limit %d): fleet_start %.2fs (%s)", volumes, cfg.Nodes, cfg.AttachLimit, p.Seconds, p.Note)
		total += p.Seconds
	}
	s := total / float64(b.N)
	b.ReportMetric(s*1e9, "ns/op")
	b.ReportMetric(s, "fleet_start_s")
	return s
}

// distributedStart starts a fleet b.N times, applies its nodes and waits
// until every agent is ready, then (timed) applies the volumes and
// workloads and waits for the ground truth. It reports the mean seconds,
// and etcd's KV calls per document during the apply (etcd_calls/doc).
func distributedStart(b *testing.B, volumes, attachLimit int) float64 {
	var m fleetStartFigures
	b.StopTimer()
	for range b.N {
		f := startBenchFleet(b, *fleetNodes, attachLimit)
		r := f.fleetStart(b, volumes)
		if r.err != nil {
			b.Fatalf("distributed fleet start of %d volumes over %d nodes: %v", volumes, len(f.nodes), r.err)
		}
		m.add(r)
		f.stop()
	}
	return m.report(b)
}

// startResult is one distributed fleet start.
type startResult struct {
	total, applied, attached time.Duration
	etcdPerDoc               float64
	err                      error
}

// fleetStart applies the fleet's volumes and workloads and waits until
// the ground truth shows them, timed. An apply that fails is reported,
// and the ground truth still watched until the deadline: the failure may
// come after the commit (the actors then go on), and whether and when
// the fleet converges all the same is part of the report.
func (bf *benchFleet) fleetStart(b *testing.B, volumes int) startResult {
	docs, want := fleetDocs(bf.nodes, volumes)
	ctx, cancel := context.WithTimeout(context.Background(), *fleetDeadline)
	defer cancel()
	calls0 := bf.etcdCalls()
	tl := bf.watchApply(want)
	b.StartTimer()
	t0 := time.Now()
	applyErr := bf.apply(ctx, docs)
	applied := time.Since(t0)
	calls1 := bf.etcdCalls()
	tl.stop(applied)
	err := bf.converge(ctx, t0, want)
	b.StopTimer()
	r := startResult{total: time.Since(t0), applied: applied, attached: bf.attached, etcdPerDoc: (calls1.total() - calls0.total()) / float64(len(docs))}
	b.Logf("distributed, %d volumes over %d nodes: the apply of %d documents: %s, with %.0f etcd KV calls (%s)",
		volumes, len(bf.nodes), len(docs), tl, calls1.total()-calls0.total(), calls1.minus(calls0))
	bf.saveEtcdMetrics("end")
	switch {
	case applyErr != nil && err == nil:
		r.err = fmt.Errorf("the apply failed after %.2fs (%w), though the ground truth converged at %.2fs", applied.Seconds(), applyErr, r.total.Seconds())
	case applyErr != nil:
		r.err = fmt.Errorf("the apply failed after %.2fs (%w), and then %w", applied.Seconds(), applyErr, err)
	case err != nil:
		r.err = err
	default:
		b.Logf("distributed, %d volumes over %d nodes: fleet start %.2fs (all attached at %.2fs)", volumes, len(bf.nodes), r.total.Seconds(), bf.attached.Seconds())
	}
	return r
}

// fleetStartFigures add up the distributed side's runs.
type fleetStartFigures struct {
	n                        int
	total, applied, attached float64
	etcdPerDoc               float64
}

func (m *fleetStartFigures) add(r startResult) {
	m.n++
	m.total += r.total.Seconds()
	m.applied += r.applied.Seconds()
	m.attached += r.attached.Seconds()
	m.etcdPerDoc += r.etcdPerDoc
}

// report reports the means and returns the fleet start's.
func (m *fleetStartFigures) report(b *testing.B) float64 {
	n := float64(m.n)
	b.ReportMetric(m.total/n, "fleet_start_s")
	b.ReportMetric(m.applied/n, "apply_s")
	b.ReportMetric(m.attached/n, "attached_s")
	b.ReportMetric(m.etcdPerDoc/n, "etcd_calls/doc")
	return m.total / n
}

// fleetDocs are tether bench's fleet start: every volume, then every
// workload, workload i on node i mod len(nodes) with volume i.
func fleetDocs(nodes []cloud.NodeName, volumes int) ([]*messages.Document, map[string]cloud.NodeName) {
	docs := make([]*messages.Document, 0, 2*volumes)
	for i := range volumes {
		docs = append(docs, volumeDoc(volumeOf(workName(i))))
	}
	want := map[string]cloud.NodeName{}
	for i := range volumes {
		w, n := workName(i), nodes[i%len(nodes)]
		docs = append(docs, workloadDoc(w, n))
		want[w] = n
	}
	return docs, want
}

func workName(i int) string { return fmt.Sprintf("w-%06d", i) }

// benchFleet is a fleet for one measurement, with its own connection to
// the cloud (the ground truth).
type benchFleet struct {
	tb       testing.TB
	f        *distributed.Fleet
	dir      string
	cloud    *cloudremote.Client
	nodes    []cloud.NodeName
	inst     map[cloud.NodeName]cloud.InstanceID
	attached time.Duration // since the apply began, once every volume was
	stopOnce sync.Once
}

// startBenchFleet starts 3 members and n agents, the cloud's instances
// with attachLimit (0: the sim's default), applies the n nodes and waits
// until every node has its instance and its agent has said hello. It is
// stopped at cleanup if not before.
func startBenchFleet(tb testing.TB, n, attachLimit int) *benchFleet {
	tb.Helper()
	dir, err := os.MkdirTemp("", "tether-bench-fleet-")
	if err != nil {
		tb.Fatal(err)
	}
	bf := &benchFleet{tb: tb, dir: dir, inst: map[cloud.NodeName]cloud.InstanceID{}}
	for i := range n {
		bf.nodes = append(bf.nodes, cloud.NodeName(fmt.Sprintf("n%03d", i+1)))
	}
	t0 := time.Now()
	bf.f, err = distributed.StartFleet(distributed.FleetConfig{Binary: binary, Dir: dir, Controllers: 3, Nodes: bf.nodes,
		Token: "bench-token", Ready: 2 * time.Minute, AttachLimit: attachLimit})
	if err != nil {
		tb.Fatalf("starting a fleet of %d agents: %v (its directory: %s)", n, err, dir)
	}
	tb.Cleanup(bf.stop)
	tb.Logf("a fleet of 3 members and %d agents (attach limit %d) started in %.1fs; its directory: %s", n, attachLimit, time.Since(t0).Seconds(), dir)
	bf.cloud, err = cloudremote.Dial(bf.f.CloudAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var docs []*messages.Document
	for _, nn := range bf.nodes {
		docs = append(docs, nodeDoc(nn))
	}
	if err := bf.apply(ctx, docs); err != nil {
		tb.Fatal(err)
	}
	for _, nn := range bf.nodes {
		id, ok := bf.cloud.InstanceOf(nn)
		if !ok {
			tb.Fatalf("node %s has no instance after its apply", nn)
		}
		bf.inst[nn] = id
	}
	if err := bf.nodesReady(ctx); err != nil {
		tb.Fatal(err)
	}
	return bf
}

// apply sends docs as one all-or-nothing apply (api.Send chunks it).
func (bf *benchFleet) apply(ctx context.Context, docs []*messages.Document) error {
	c, cctx, closeConn, err := bf.f.API(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = closeConn() }()
	if _, err := api.Send(cctx, c, docs); err != nil {
		return fmt.Errorf("apply of %d documents: %w", len(docs), err)
	}
	return nil
}

// nodesReady waits until the API shows every node ready: its agent's
// hello has reached its node actor.
func (bf *benchFleet) nodesReady(ctx context.Context) error {
	c, cctx, closeConn, err := bf.f.API(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = closeConn() }()
	for {
		ready, token := 0, ""
		for {
			res, err := c.Get(cctx, &messages.GetRequest{Kind: "nodes", Continue: token})
			if err != nil {
				return fmt.Errorf("listing nodes: %w", err)
			}
			for _, n := range res.Nodes {
				if n.GetStatus().GetReady() {
					ready++
				}
			}
			if token = res.Continue; token == "" {
				break
			}
		}
		if ready == len(bf.nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d nodes ready: %w", ready, len(bf.nodes), ctx.Err())
		case <-time.After(time.Second): // polling pace
		}
	}
}

// converge polls the ground truth until every workload's volume is
// attached to its node's instance, and only there, and mounted for it
// there. The cloud is asked first; the nodes' disks are scanned once it
// is done, and every 30 s, when it logs how far it is.
func (bf *benchFleet) converge(ctx context.Context, t0 time.Time, want map[string]cloud.NodeName) error {
	told := time.Now()
	for {
		tell := time.Since(told) >= 30*time.Second || ctx.Err() != nil
		atts, mounted, what := bf.truth(want, tell)
		if bf.attached == 0 && atts == len(want) {
			bf.attached = time.Since(t0)
		}
		if what == "" {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("after %s, %d of %d volumes attached where wanted, %d mounted; %s: %w", time.Since(t0).Round(time.Second), atts, len(want), mounted, what, ctx.Err())
		}
		if tell {
			told = time.Now()
			bf.tb.Logf("after %s: %d of %d volumes attached where wanted, %d mounted; %s", time.Since(t0).Round(time.Second), atts, len(want), mounted, what)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond): // polling pace
		}
	}
}

// truth counts the volumes attached where wanted (and nowhere else) and,
// once that is all of them or if scan, the publishes mounted where
// wanted; what names the first difference ("" when there is none).
func (bf *benchFleet) truth(want map[string]cloud.NodeName, scan bool) (attached, mounted int, what string) {
	atts, err := bf.cloud.Attachments()
	if err != nil {
		return 0, 0, "cloud: " + err.Error()
	}
	for w, n := range want {
		v := cloud.VolumeID(volumeOf(w))
		if got := atts[v]; len(got) == 1 && got[0] == bf.inst[n] {
			attached++
		} else if what == "" {
			what = fmt.Sprintf("%s attached to %v, want [%s]", v, got, bf.inst[n])
		}
	}
	if attached < len(want) && !scan {
		return attached, 0, what
	}
	for _, n := range bf.nodes {
		l, err := layout.New(bf.f.NodeDir(n))
		if err != nil {
			return attached, mounted, err.Error()
		}
		found, err := mount.Scan(l, mount.NewSymlink(l))
		if err != nil {
			return attached, mounted, err.Error()
		}
		for _, e := range found.Entries {
			if e.Kind == mount.KindPublish && e.State == mount.Mounted && want[e.UID] == n && e.Volume == volumeOf(e.UID) {
				mounted++
			}
		}
	}
	if what == "" && mounted < len(want) {
		what = fmt.Sprintf("%d publishes not mounted", len(want)-mounted)
	}
	return attached, mounted, what
}

// stop stops every process of the fleet and removes its directory, unless
// the benchmark failed or -fleet.keep asks to keep it (the logs of every
// process are under logs/).
func (bf *benchFleet) stop() {
	bf.stopOnce.Do(func() {
		if bf.cloud != nil {
			_ = bf.cloud.Close()
		}
		if err := bf.f.Stop(); err != nil {
			bf.tb.Errorf("stopping the fleet: %v", err)
		}
		if bf.tb.Failed() || *fleetKeep {
			bf.tb.Logf("the fleet's directory, logs included, is kept: %s", bf.dir)
			return
		}
		if err := os.RemoveAll(bf.dir); err != nil {
			bf.tb.Errorf("removing the fleet's directory: %v", err)
		}
	})
}

// kvCalls counts etcd's unary KV calls handled (any outcome), by method:
// Range, Txn, Put, DeleteRange, Compact.
type kvCalls map[string]float64

func (k kvCalls) total() float64 {
	var t float64
	for _, v := range k {
		t += v
	}
	return t
}

// minus is k - o by method, as text, biggest first.
func (k kvCalls) minus(o kvCalls) string {
	var parts []string
	for _, m := range slices.SortedFunc(maps.Keys(k), func(a, b string) int { return cmp.Compare(k[b]-o[b], k[a]-o[a]) }) {
		if d := k[m] - o[m]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", m, d))
		}
	}
	return strings.Join(parts, ", ")
}

// etcdCalls reads etcd's own counters (its /metrics, on the client URL);
// empty when they cannot be read.
func (bf *benchFleet) etcdCalls() kvCalls {
	out := kvCalls{}
	resp, err := http.Get(bf.f.Etcd.Endpoints()[0] + "/metrics")
	if err != nil {
		bf.tb.Logf("etcd metrics: %v", err)
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_handled_total{") || !strings.Contains(line, `grpc_service="etcdserverpb.KV"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, `grpc_method="`)
		method, _, _ := strings.Cut(rest, `"`)
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			out[method] += v
		}
	}
	return out
}

// applyTimeline is what the ground truth shows of an apply while it runs:
// when the last volume's disk exists in the cloud (validation, planning
// and provisioning done), when the store holds the last workload (the
// commit), and when the cloud has a first attachment (the actors at work).
type applyTimeline struct {
	t0                            time.Time
	mu                            sync.Mutex
	disks, committed, firstAttach time.Duration
	returned                      time.Duration
	done                          chan struct{}
	wg                            sync.WaitGroup
}

// watchApply polls for the timeline of the apply about to start, every
// 250 ms, until stop: two or three small reads each time.
func (bf *benchFleet) watchApply(want map[string]cloud.NodeName) *applyTimeline {
	tl := &applyTimeline{t0: time.Now(), done: make(chan struct{})}
	last := workName(len(want) - 1)
	st, err := store.OpenEtcd(store.EtcdConfig{Endpoints: bf.f.Etcd.Endpoints(), Prefix: "/tether/store/"})
	if err != nil {
		bf.tb.Logf("apply timeline: %v", err)
		close(tl.done)
		return tl
	}
	tl.wg.Add(1)
	go func() {
		defer tl.wg.Done()
		defer st.Close()
		var disks, committed, attached bool
		for !(disks && committed && attached) {
			since := time.Since(tl.t0)
			if !disks {
				_, _, disks = bf.cloud.Volume(cloud.VolumeID(volumeOf(last)))
				tl.seen(disks, &tl.disks, since)
			}
			if !committed {
				_, committed, _ = st.Workload(last)
				tl.seen(committed, &tl.committed, since)
			}
			if !attached {
				atts, err := bf.cloud.Attachments()
				attached = err == nil && len(atts) > 0
				tl.seen(attached, &tl.firstAttach, since)
			}
			select {
			case <-tl.done:
				return
			case <-time.After(250 * time.Millisecond): // polling pace
			}
		}
	}()
	return tl
}

func (tl *applyTimeline) seen(yes bool, at *time.Duration, since time.Duration) {
	if yes {
		tl.mu.Lock()
		*at = since
		tl.mu.Unlock()
	}
}

func (tl *applyTimeline) stop(returned time.Duration) {
	select {
	case <-tl.done:
	default:
		close(tl.done)
	}
	tl.wg.Wait()
	tl.returned = returned
}

func (tl *applyTimeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	at := func(d time.Duration) string {
		if d == 0 {
			return "not seen"
		}
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("every disk created at %s, the commit seen at %s, the first attachment at %s, the call returned at %.2fs",
		at(tl.disks), at(tl.committed), at(tl.firstAttach), tl.returned.Seconds())
}

// saveEtcdMetrics writes etcd's /metrics into the fleet's logs (its disk
// and request latencies, for a run that is slow).
func (bf *benchFleet) saveEtcdMetrics(when string) {
	resp, err := http.Get(bf.f.Etcd.Endpoints()[0] + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	out, err := os.Create(filepath.Join(bf.dir, "logs", "etcd-metrics-"+when+".txt"))
	if err != nil {
		return
	}
	_, _ = io.Copy(out, resp.Body)
	_ = out.Close()
}
