package distributed_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
	cloudremote "github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// binary is the tether executable the fleet runs, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tether-fleet-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "tether")
	build := exec.Command("go", "build", "-o", binary, "github.com/tether/tether/cmd/tether")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tether:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// rig is a running fleet with what the test needs to judge it: its own
// connection to the cloud (ground truth) and the desired placement.
type rig struct {
	t     *testing.T
	f     *distributed.Fleet
	cloud *cloudremote.Client
	nodes []cloud.NodeName
	i1    i1
	// want: workload -> node, each workload using the volume "v-"+its
	// suffix.
	want map[string]cloud.NodeName
}

func startRig(t *testing.T, controllers, nodes int) *rig {
	t.Helper()
	return startRigWith(t, controllers, nodes, nil)
}

// startRigWith is startRig with the fleet's configuration adjusted by
// adjust (nil: as startRig).
func startRigWith(t *testing.T, controllers, nodes int, adjust func(*distributed.FleetConfig)) *rig {
	t.Helper()
	var names []cloud.NodeName
	var f *distributed.Fleet
	for i := range nodes {
		names = append(names, cloud.NodeName(fmt.Sprintf("n%d", i+1)))
	}
	// Kept when the test fails, with every process's log under logs/.
	dir, err := os.MkdirTemp("", "tether-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	fc := distributed.FleetConfig{Binary: binary, Dir: dir, Controllers: controllers, Nodes: names,
		Token: "fleet-test-token", SyncPeriod: 2 * time.Second, Heartbeat: time.Second, Permissive: true}
	if adjust != nil {
		adjust(&fc)
	}
	f, err = distributed.StartFleet(fc)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, f: f, nodes: names, want: map[string]cloud.NodeName{}}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
		if t.Failed() || os.Getenv("TETHER_FLEET_KEEP") != "" {
			if t.Failed() {
				r.dumpLogs(dir)
			}
			t.Logf("the fleet's directory, logs included, is kept: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	r.cloud, err = cloudremote.Dial(f.CloudAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cloud.Close() })
	r.watchI1()
	return r
}

// i1 judges I1 on the cloud's own timeline: every volume of the test is
// exclusive, so none may ever be attached to two instances at once (the
// permissive cloud would let it happen).
type i1 struct {
	mu         sync.Mutex
	atts       map[cloud.VolumeID]map[cloud.InstanceID]bool
	violations []string
}

// reset starts a new watch's timeline (its snapshot follows).
func (j *i1) reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.atts = map[cloud.VolumeID]map[cloud.InstanceID]bool{}
}

func (j *i1) step(ev cloudremote.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	ch := ev.Change
	if ev.Synced {
		return
	}
	if j.atts[ch.Volume] == nil {
		j.atts[ch.Volume] = map[cloud.InstanceID]bool{}
	}
	if !ch.Attached {
		delete(j.atts[ch.Volume], ch.Instance)
		return
	}
	j.atts[ch.Volume][ch.Instance] = true
	if len(j.atts[ch.Volume]) > 1 {
		j.violations = append(j.violations, fmt.Sprintf("I1: %s attached to %v at %s (%s)", ch.Volume, slices.Sorted(maps.Keys(j.atts[ch.Volume])), ch.Time.Format(time.RFC3339Nano), ch.Reason))
	}
}

// take returns the violations found so far and forgets them.
func (j *i1) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	v := j.violations
	j.violations = nil
	return v
}

// watchI1 runs the I1 judge for the whole test. A watch that ends (the
// cloud was killed) starts again from a fresh snapshot.
func (r *rig) watchI1() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			r.i1.reset()
			_ = r.cloud.Watch(ctx, func(ev cloudremote.Event) error {
				r.i1.step(ev)
				return nil
			})
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond): // the pace of re-watching a cloud that is down
			}
		}
	}()
	r.t.Cleanup(func() {
		cancel()
		<-done
		for _, v := range r.i1.take() {
			r.t.Error(v)
		}
	})
}

// breakI1 attaches vol to a second instance behind tether's back (the
// cloud is permissive) and waits for the judge to catch it: the checker is
// proven on the live path, not only in a unit test.
func (r *rig) breakI1(vol cloud.VolumeID, other cloud.NodeName) {
	r.t.Helper()
	inst, ok := r.cloud.InstanceOf(other)
	if !ok {
		r.t.Fatalf("no instance for %s", other)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.cloud.Attach(ctx, vol, inst); err != nil {
		r.t.Fatalf("the deliberate second attach: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v := r.i1.take(); len(v) > 0 {
			if !strings.Contains(v[0], string(vol)) {
				r.t.Fatalf("the I1 judge caught something else: %v", v)
			}
			r.t.Logf("the I1 judge caught the deliberate double attach: %s", v[0])
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal("the I1 judge missed a deliberate double attach")
		}
		time.Sleep(20 * time.Millisecond) // polling pace
	}
}

func (r *rig) dumpLogs(dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(string(b), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		r.t.Logf("==== %s (tail)\n%s", filepath.Base(l), strings.Join(lines, "\n"))
	}
}

// apply sends docs through the API of a running member, retrying while the
// cluster settles (a member just killed, etcd restarting), for up to 60 s.
func (r *rig) apply(docs ...*messages.Document) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, ctx, closeConn, err := r.f.API(context.Background())
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err = api.Send(cctx, c, docs)
			cancel()
			_ = closeConn()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("apply of %d documents: %v", len(docs), err)
		}
		time.Sleep(500 * time.Millisecond) // a retry's pace, not a synchronization
	}
}

func nodeDoc(n cloud.NodeName) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: string(n)}}}
}

func volumeDoc(v string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: v, AccessMode: "ReadWriteOnce"}}}
}

func workloadDoc(w string, n cloud.NodeName) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: w, Node: string(n),
		Volumes: []*messages.WorkloadVolumeDoc{{Name: volumeOf(w)}}}}}
}

func volumeOf(w string) string { return "v-" + strings.TrimPrefix(w, "w-") }

// place schedules workload w on node n (creating its volume first).
func (r *rig) place(moves map[string]cloud.NodeName) {
	var docs []*messages.Document
	for w, n := range moves {
		if _, ok := r.want[w]; !ok {
			docs = append(docs, volumeDoc(volumeOf(w)))
		}
		docs = append(docs, workloadDoc(w, n))
		r.want[w] = n
	}
	r.apply(docs...)
}

// truth reads what is: the cloud's attachments and every node's mounts on
// disk. It returns a description of how it differs from want ("" when it
// does not).
func (r *rig) truth() string {
	atts, err := r.cloud.Attachments()
	if err != nil {
		return "cloud: " + err.Error()
	}
	inst := map[cloud.NodeName]cloud.InstanceID{}
	for _, n := range r.nodes {
		id, ok := r.cloud.InstanceOf(n)
		if !ok {
			return fmt.Sprintf("node %s has no instance", n)
		}
		inst[n] = id
	}
	var diffs []string
	wantVols := map[cloud.VolumeID]cloud.NodeName{}
	for w, n := range r.want {
		wantVols[cloud.VolumeID(volumeOf(w))] = n
	}
	for v, n := range wantVols {
		if got := atts[v]; len(got) != 1 || got[0] != inst[n] {
			diffs = append(diffs, fmt.Sprintf("%s attached to %v, want [%s] (%s)", v, got, inst[n], n))
		}
	}
	for v, got := range atts {
		if _, ok := wantVols[v]; !ok && len(got) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s attached to %v, wanted nowhere", v, got))
		}
	}
	for _, n := range r.nodes {
		l, err := layout.New(r.f.NodeDir(n))
		if err != nil {
			return err.Error()
		}
		found, err := mount.Scan(l, mount.NewSymlink(l))
		if err != nil {
			return err.Error()
		}
		published := map[string]bool{}
		for _, e := range found.Entries {
			if e.Kind == mount.KindPublish && e.State == mount.Mounted {
				published[e.UID+"/"+e.Volume] = true
			}
		}
		for w, wn := range r.want {
			key := w + "/" + volumeOf(w)
			switch {
			case wn == n && !published[key]:
				diffs = append(diffs, fmt.Sprintf("%s not mounted on %s", key, n))
			case wn != n && published[key]:
				diffs = append(diffs, fmt.Sprintf("%s still mounted on %s", key, n))
			}
			delete(published, key)
		}
		for key := range published {
			diffs = append(diffs, fmt.Sprintf("%s mounted on %s, wanted nowhere", key, n))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// converge waits until the truth is what is wanted and returns how long
// it took.
func (r *rig) converge(what string, within time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		d := r.truth()
		if d == "" {
			took := time.Since(start)
			r.t.Logf("%s: converged in %v", what, took.Round(10*time.Millisecond))
			return took
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not converged within %v: %s", what, within, d)
		}
		time.Sleep(100 * time.Millisecond) // polling pace
	}
}

// partitionFor is how long a partition lasts: several heartbeats, so that
// connections break and messages are lost.
const partitionFor = 3 * time.Second

func TestFleetSurvivesProcessFaults(t *testing.T) {
	r := startRig(t, 3, 4)
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, nodeDoc(n))
	}
	r.apply(docs...)
	initial := map[string]cloud.NodeName{}
	for i := range 12 {
		initial[fmt.Sprintf("w-%d", i)] = r.nodes[i%len(r.nodes)]
	}
	r.place(initial)
	r.converge("fleet start", 60*time.Second)

	// A member dies: its actors are activated on the others. Every
	// workload moves, so the volumes it owned must be served again.
	if err := r.f.KillController(0); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	moves := map[string]cloud.NodeName{}
	for w, n := range r.want {
		moves[w] = r.nodes[(slices.Index(r.nodes, n)+1)%len(r.nodes)]
	}
	r.place(moves)
	r.converge("controller 0 SIGKILLed, every workload moved", 60*time.Second)
	t.Logf("every volume served again %v after the SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	if err := r.f.StartController(0); err != nil {
		t.Fatal(err)
	}
	r.place(map[string]cloud.NodeName{"w-12": r.nodes[0]})
	r.converge("controller 0 back, 1 workload added", 60*time.Second)

	// An agent dies and comes back: it reconstructs from disk.
	if err := r.f.KillAgent(r.nodes[2]); err != nil {
		t.Fatal(err)
	}
	r.place(map[string]cloud.NodeName{"w-2": r.nodes[0]})
	if err := r.f.StartAgent(r.nodes[2]); err != nil {
		t.Fatal(err)
	}
	r.converge("agent n3 SIGKILLed and restarted", 60*time.Second)

	// The cloud dies and comes back.
	if err := r.f.KillCloud(); err != nil {
		t.Fatal(err)
	}
	if err := r.f.StartCloud(); err != nil {
		t.Fatal(err)
	}
	r.place(map[string]cloud.NodeName{"w-3": r.nodes[1]})
	r.converge("cloud SIGKILLed and restarted", 60*time.Second)

	// etcd restarts.
	if err := r.f.Etcd.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := r.f.Etcd.Restart(); err != nil {
		t.Fatal(err)
	}
	r.place(map[string]cloud.NodeName{"w-4": r.nodes[2]})
	r.converge("etcd restarted", 90*time.Second)

	// A member is cut off from the others' remote traffic, then healed.
	r.f.Partition(1, true)
	r.place(map[string]cloud.NodeName{"w-6": r.nodes[3], "w-7": r.nodes[0], "w-8": r.nodes[1], "w-9": r.nodes[2]})
	time.Sleep(partitionFor) // the fault's length, not a synchronization
	r.f.Partition(1, false)
	r.converge("member 1 partitioned and healed", 90*time.Second)

	// Every member loses its etcd lease at once (as after an etcd outage
	// longer than the TTL): the others drop and block each of them, so
	// each must notice, leave, and join again under a new identity.
	// A SIGKILLed member's record stays until its lease expires (an etcd
	// restart renews every lease's TTL), so wait for it to go first.
	r.eventually("the SIGKILLed member's record expired", 3*distributed.DefaultMemberTTL, func() bool {
		return len(r.memberIDs()) == 3
	})
	before := r.memberIDs()
	r.revokeMemberLeases()
	r.eventually("every member joined again under a new identity", 90*time.Second, func() bool {
		now := r.memberIDs()
		return len(now) == 3 && !slices.ContainsFunc(now, func(id string) bool { return slices.Contains(before, id) })
	})
	r.place(map[string]cloud.NodeName{"w-5": r.nodes[0], "w-10": r.nodes[3]})
	r.converge("every member lost its lease and joined again", 90*time.Second)

	// etcd is down for longer than a member's lease: every member loses
	// its place, and its first attempts to join again fail (nothing
	// answers): each keeps trying until etcd is back.
	before = r.memberIDs()
	if err := r.f.Etcd.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(distributed.DefaultMemberTTL + 3*time.Second) // the outage's length, not a synchronization
	if err := r.f.Etcd.Restart(); err != nil {
		t.Fatal(err)
	}
	r.eventually("every member joined again after an etcd outage longer than its lease", 120*time.Second, func() bool {
		now := r.memberIDs()
		return len(now) == 3 && !slices.ContainsFunc(now, func(id string) bool { return slices.Contains(before, id) })
	})
	r.place(map[string]cloud.NodeName{"w-11": r.nodes[2]})
	r.converge("etcd down longer than the members' leases", 90*time.Second)

	// The judge that watched all this catches a double attach.
	w := "w-1"
	r.breakI1(cloud.VolumeID(volumeOf(w)), r.nodes[(slices.Index(r.nodes, r.want[w])+1)%len(r.nodes)])
}

// etcd is an admin client of the fleet's etcd, closed at the end.
func (r *rig) etcd() *clientv3.Client {
	r.t.Helper()
	cfg := clientv3.Config{Endpoints: r.f.Etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if strings.HasPrefix(r.f.Etcd.Endpoints()[0], "https://") {
		ca, cert, key := r.f.EtcdClientTLS()
		tc, err := certs.ClientConfig(ca, cert, key, "")
		if err != nil {
			r.t.Fatal(err)
		}
		cfg.TLS = tc
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// memberRecords are the members registered in etcd (bootstrap/process/distributed's
// membership: under /tether/cluster/tether/, one key per member ID).
const memberRecords = "/tether/cluster/" + distributed.ClusterName + "/"

// memberIDs lists the registered members' IDs.
func (r *rig) memberIDs() []string {
	c := r.etcd()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, memberRecords, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		r.t.Logf("listing members: %v", err)
		return nil
	}
	var ids []string
	for _, kv := range resp.Kvs {
		ids = append(ids, strings.TrimPrefix(string(kv.Key), memberRecords))
	}
	return ids
}

// memberRecordKVs are the members' records as etcd holds them (their
// leases too).
func (r *rig) memberRecordKVs() []*mvccpb.KeyValue {
	r.t.Helper()
	c := r.etcd()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, memberRecords, clientv3.WithPrefix())
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.Kvs
}

// revokeMemberLeases revokes the lease of every registered member.
func (r *rig) revokeMemberLeases() {
	r.t.Helper()
	kvs := r.memberRecordKVs()
	if len(kvs) != 3 {
		r.t.Fatalf("%d members registered, want 3", len(kvs))
	}
	c := r.etcd()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, kv := range kvs {
		if _, err := c.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
			r.t.Fatalf("revoking %s's lease: %v", kv.Key, err)
		}
	}
}

// eventually polls cond until it holds or d passes.
func (r *rig) eventually(what string, d time.Duration, cond func() bool) {
	r.t.Helper()
	start := time.Now()
	testkit.Eventually(r.t, d, cond, "%s", what)
	r.t.Logf("%s after %v", what, time.Since(start).Round(10*time.Millisecond))
}
