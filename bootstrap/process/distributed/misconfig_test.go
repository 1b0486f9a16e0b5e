package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/bootstrap/verify/journal"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// A cluster on mutual TLS everywhere (etcd and remote) keeps serving while
// a member that breaks its remote TLS tries to join: one without the
// remote TLS flags, then one whose certificate is another CA's. Each
// reaches etcd and the cloud, but no peer completes a handshake with it,
// so the join gate keeps it out: it never registers, never acts (its
// journal records no join, cloud call, status write or event), says why, and
// exits non-zero after its join bound. Meanwhile workloads applied after
// it started reach their mounts within a minute (ground truth: the
// cloud's attachments and the mounts on each node's disk, and the API
// says Running), and no node goes NotReady at any time.
func TestFleetMisconfiguredMemberUnderMutualTLS(t *testing.T) {
	r := startRigWith(t, 3, 3, func(c *distributed.FleetConfig) { c.EtcdTLS, c.RemoteTLS = true, true })
	var docs []*messages.Document
	for _, n := range r.nodes {
		docs = append(docs, nodeDoc(n))
	}
	r.apply(docs...)
	r.placeBatch(1, 20)
	r.converge("20 workloads on a cluster over mutual TLS", 60*time.Second)
	r.allRunning("the first 20 workloads", 30*time.Second)

	r.sample() // judged at cleanup, whatever ends the test
	next := 21
	for _, kind := range []distributed.Misconfig{distributed.NoRemoteTLS, distributed.ForeignCA} {
		refusedBefore := r.refusedHandshakes()
		const join = 8 * time.Second
		i, err := r.f.StartMisconfiguredController(kind, join)
		if err != nil {
			t.Fatal(err)
		}
		said := func() string { b, _ := os.ReadFile(r.f.ControllerLog(i)); return string(b) }
		r.eventually(fmt.Sprintf("the %s member started", kind), 30*time.Second, func() bool {
			recs, err := journal.Read(r.f.ControllerJournal(i))
			return err == nil && len(recs) > 0
		})

		// Applied after it started, while it tries to join.
		r.placeBatch(next, next+19)
		next += 20
		applied := time.Now()
		r.converge(fmt.Sprintf("%d workloads, applied while the %s member tries to join", next-1, kind), time.Minute)
		r.allRunning(fmt.Sprintf("the workloads applied while the %s member tries to join", kind), time.Minute-time.Since(applied))

		ended, exit := r.f.ControllerExit(i, join+60*time.Second)
		var ee *exec.ExitError
		switch {
		case !ended:
			t.Errorf("the %s member still runs %v after its join bound", kind, join+60*time.Second)
			if err := r.f.KillController(i); err != nil {
				t.Fatal(err)
			}
		case !errors.As(exit, &ee) || ee.ExitCode() == 0:
			t.Errorf("the %s member ended with %v, want a non-zero exit", kind, exit)
		}
		if out := said(); !strings.Contains(out, "not joining yet") || !strings.Contains(out, "cannot be reached over remote") || !strings.Contains(out, "--remote-tls-cert/-key/-ca") {
			t.Errorf("the %s member did not say why it gave up:\n%s", kind, out)
		}
		if after := r.refusedHandshakes(); after <= refusedBefore {
			t.Errorf("no member logged a refused TLS handshake from the %s member (%d before, %d after)", kind, refusedBefore, after)
		}
		r.neverActed(kind, r.f.ControllerJournal(i))
	}
}

// placeBatch places workloads w-from .. w-to round robin on the nodes, in
// one apply.
func (r *rig) placeBatch(from, to int) {
	moves := map[string]cloud.NodeName{}
	for k := from; k <= to; k++ {
		moves[fmt.Sprintf("w-%d", k)] = r.nodes[k%len(r.nodes)]
	}
	r.place(moves)
}

// allRunning waits, up to within, until the API reports every wanted
// workload Running on its node.
func (r *rig) allRunning(what string, within time.Duration) {
	r.t.Helper()
	r.eventually(what+": Running as the API reports", within, func() bool {
		phase := r.workloadPhases()
		for w := range r.want {
			if phase[w] != "Running" {
				return false
			}
		}
		return true
	})
}

// workloadPhases lists every workload's phase through the API, page by
// page (nil if a call fails: the caller polls).
func (r *rig) workloadPhases() map[string]string {
	c, ctx, closeConn, err := r.f.API(context.Background())
	if err != nil {
		return nil
	}
	defer func() { _ = closeConn() }()
	out := map[string]string{}
	for cont := ""; ; {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := c.Get(cctx, &messages.GetRequest{Kind: "workloads", Continue: cont})
		cancel()
		if err != nil {
			return nil
		}
		for _, w := range res.GetWorkloads() {
			out[w.GetSpec().GetName()] = w.GetPhase()
		}
		if cont = res.GetContinue(); cont == "" {
			return out
		}
	}
}

// refusedHandshakes counts the refused TLS handshakes the configured
// members logged so far.
func (r *rig) refusedHandshakes() int {
	n := 0
	for i := range 3 {
		b, _ := os.ReadFile(r.f.ControllerLog(i))
		n += strings.Count(string(b), "refused a peer's TLS handshake")
	}
	return n
}

// neverActed judges a misconfigured member's journal: it started, and
// did nothing else: no join, no cloud call, no node status write, no
// volume event, no actor restart.
func (r *rig) neverActed(kind distributed.Misconfig, path string) {
	r.t.Helper()
	recs, err := journal.Read(path)
	if err != nil {
		r.t.Fatalf("the %s member's journal: %v", kind, err)
	}
	if len(recs) == 0 || recs[0].Kind != journal.KindStart {
		r.t.Errorf("the %s member's journal %s does not record its start: %v", kind, path, recs)
	}
	for _, rec := range recs {
		if rec.Kind != journal.KindStart {
			r.t.Errorf("the %s member acted: %s %s %s %s", kind, rec.Kind, rec.Op, rec.Volume, rec.Text)
		}
	}
}

// sampler watches the cluster from the side for the whole test: every
// node's readiness as the API reports it, and how many members etcd
// lists (at most maxMembers), every 200 ms.
type sampler struct {
	mu         sync.Mutex
	maxMembers int
	violations []string
	samples    int
	cancel     func()
	done       chan struct{}
}

func (r *rig) sample() *sampler {
	r.t.Helper()
	ec := r.etcd()
	c, ctx, closeConn, err := r.f.API(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	// The API's context carries its token; etcd must not get it (it
	// would take it for an etcd auth token).
	apiCtx, cancel := context.WithCancel(ctx)
	sctx, stopEtcd := context.WithCancel(context.Background())
	s := &sampler{maxMembers: 3, cancel: func() { cancel(); stopEtcd() }, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer ec.Close()
		defer func() { _ = closeConn() }()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			s.once(apiCtx, sctx, c, ec, len(r.nodes))
			select {
			case <-apiCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	r.t.Cleanup(func() {
		for _, v := range s.stop() {
			r.t.Error(v)
		}
		r.t.Logf("%d samples of the nodes' readiness and the members in etcd", s.samples)
	})
	return s
}

// once takes one sample.
func (s *sampler) once(apiCtx, etcdCtx context.Context, c messages.TetherClient, ec *clientv3.Client, nodes int) {
	at := time.Now().Format(time.RFC3339Nano)
	actx, cancel := context.WithTimeout(apiCtx, 5*time.Second)
	defer cancel()
	res, err := c.Get(actx, &messages.GetRequest{Kind: "nodes"})
	ectx, ecancel := context.WithTimeout(etcdCtx, 5*time.Second)
	defer ecancel()
	members, merr := ec.Get(ectx, memberRecords, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if apiCtx.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	switch {
	case err != nil:
		s.violations = append(s.violations, fmt.Sprintf("%s: the API did not list the nodes: %v", at, err))
	case len(res.GetNodes()) != nodes:
		s.violations = append(s.violations, fmt.Sprintf("%s: the API lists %d nodes, want %d", at, len(res.GetNodes()), nodes))
	}
	for _, n := range res.GetNodes() {
		if !n.GetStatus().GetReady() {
			s.violations = append(s.violations, fmt.Sprintf("%s: node %s NotReady", at, n.GetSpec().GetName()))
		}
	}
	if merr != nil {
		s.violations = append(s.violations, fmt.Sprintf("%s: listing the members in etcd: %v", at, merr))
	} else if n := len(members.Kvs); n > s.maxMembers {
		var ids []string
		for _, kv := range members.Kvs {
			ids = append(ids, strings.TrimPrefix(string(kv.Key), memberRecords))
		}
		slices.Sort(ids)
		s.violations = append(s.violations, fmt.Sprintf("%s: %d members registered, at most %d expected: %v", at, n, s.maxMembers, ids))
	}
}

// stop ends the sampling and returns what it found wrong (or that it
// never sampled).
func (s *sampler) stop() []string {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == 0 {
		return []string{"the sampler took no sample"}
	}
	return s.violations
}
