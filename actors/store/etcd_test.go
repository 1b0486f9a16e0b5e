package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// TestEtcdTwoClients: two stores on one prefix (two processes) see each
// other's writes, whichever wrote.
func TestEtcdTwoClients(t *testing.T) {
	srv := sharedEtcd(t)
	cfg := EtcdConfig{Prefix: freshPrefix()}
	a, b := openEtcd(t, srv, cfg), openEtcd(t, srv, cfg)
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	writes := []struct {
		name  string
		write func(s Store) error
	}{
		{"desired state", func(s Store) error {
			return s.Apply([]Op{
				{PutVolume: &VolumeSpec{ID: "v1"}}, {PutNode: &NodeSpec{Name: "n1"}},
				{PutWorkload: &Workload{UID: "w1", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
			})
		}},
		{"node status", func(s Store) error {
			return s.PutNodeStatus(nodestatus.Status{Name: "n1", VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}})
		}},
		{"intent", func(s Store) error {
			return s.PutIntent(Intent{Volume: "v1", Node: "n1", Op: 1, Attach: true, Deadline: at})
		}},
		{"replaced workload", func(s Store) error {
			return s.PutWorkload(Workload{UID: "w1", Node: "n2", Volumes: []cloud.VolumeID{"v1"}})
		}},
	}
	for i, w := range writes {
		writer, reader := a, b
		if i%2 == 1 {
			writer, reader = b, a
		}
		must(t, w.write(writer))
		if got, want := snap(t, reader), snap(t, writer); !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s: the other client reads\n %+v\nthe writer\n %+v", w.name, got, want)
		}
	}
	if got, _ := a.DesiredNodes("v1"); !reflect.DeepEqual(got, []cloud.NodeName{"n2"}) {
		t.Fatalf("DesiredNodes(v1) = %v, want [n2]", got)
	}
	if got, _ := b.Intents("v1"); len(got) != 1 || !got[0].Attach {
		t.Fatalf("Intents(v1) = %+v", got)
	}
	if got, _ := b.StatusesWithVolume("v1"); len(got) != 1 {
		t.Fatalf("StatusesWithVolume(v1) = %+v", got)
	}
}

// TestEtcdRacingApplies: writers of two clients apply at once, each batch
// creating a workload on a shared volume and replacing a shared workload:
// every batch counts once, none is lost, Seqs are distinct and the
// indexes agree with the records.
func TestEtcdRacingApplies(t *testing.T) {
	const clients, writers, each = 2, 3, 10
	srv := sharedEtcd(t)
	cfg := EtcdConfig{Prefix: freshPrefix()}
	stores := []*Etcd{openEtcd(t, srv, cfg), openEtcd(t, srv, cfg)}
	done := make(chan error, clients*writers)
	for c := range clients {
		for g := range writers {
			go func() {
				var err error
				for i := range each {
					node := cloud.NodeName(fmt.Sprintf("n%d-%d", c, g))
					err = errors.Join(err, stores[c].Apply([]Op{
						{PutWorkload: &Workload{UID: fmt.Sprintf("w%d-%d-%d", c, g, i), Node: node, Volumes: []cloud.VolumeID{"shared"}}},
						{PutWorkload: &Workload{UID: "last", Node: node, Volumes: []cloud.VolumeID{"other"}}},
					}))
				}
				done <- err
			}()
		}
	}
	for range clients * writers {
		must(t, <-done)
	}
	total := clients * writers * each
	if rev, err := stores[0].Revision(); err != nil || rev != uint64(total) {
		t.Fatalf("Revision = %d, %v; want %d", rev, err, total)
	}
	ws, err := stores[1].Workloads()
	must(t, err)
	if len(ws) != total+1 {
		t.Fatalf("%d workloads, want %d", len(ws), total+1)
	}
	seqs := map[uint64]bool{}
	for _, w := range ws {
		if seqs[w.Seq] || w.Seq == 0 || w.Seq > uint64(total+1) {
			t.Fatalf("workload %s has Seq %d: repeated or out of 1..%d", w.UID, w.Seq, total+1)
		}
		seqs[w.Seq] = true
	}
	nodes, err := stores[0].DesiredNodes("shared")
	must(t, err)
	if len(nodes) != clients*writers {
		t.Fatalf("DesiredNodes(shared) = %v, want the %d writers' nodes", nodes, clients*writers)
	}
	last, _, _ := stores[0].Workload("last")
	if on, _ := stores[1].DesiredNodes("other"); !reflect.DeepEqual(on, []cloud.NodeName{last.Node}) {
		t.Fatalf("DesiredNodes(other) = %v, want only %s, where the last replace put it", on, last.Node)
	}
}

// TestEtcdFencesAcrossClients: two processes claim one owner in turn; the
// one that claimed first is refused, whichever it is.
func TestEtcdFencesAcrossClients(t *testing.T) {
	srv := sharedEtcd(t)
	cfg := EtcdConfig{Prefix: freshPrefix()}
	procs := []*Etcd{openEtcd(t, srv, cfg), openEtcd(t, srv, cfg)}
	for _, w := range fenceWriters {
		t.Run(w.name, func(t *testing.T) {
			epochs := make([]uint64, len(procs))
			n := 0
			for round := range 4 {
				winner, loser := round%2, 1-round%2
				for _, p := range []int{loser, winner} { // the winner claims last
					e, err := procs[p].Claim(w.owner)
					must(t, err)
					if e <= epochs[0] || e <= epochs[1] {
						t.Fatalf("round %d: claim %d, not above the earlier %v", round, e, epochs)
					}
					epochs[p] = e
				}
				n++
				must(t, w.write(procs[winner], n, epochs[winner]))
				if err := w.write(procs[loser], n+100, epochs[loser]); !errors.Is(err, ErrFenced) {
					t.Fatalf("round %d: the loser's write = %v, want ErrFenced", round, err)
				}
				if got := w.read(t, procs[loser]); got != n {
					t.Fatalf("round %d: value %d, want the winner's %d", round, got, n)
				}
			}
		})
	}
}

// TestEtcdPinnedReads: a read inside a transaction honours its revision,
// which the index lookups rely on for their snapshot.
func TestEtcdPinnedReads(t *testing.T) {
	e := freshEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := e.k.volume("pinned")
	first, err := e.c.Put(ctx, key, "1")
	must(t, err)
	_, err = e.c.Put(ctx, key, "2")
	must(t, err)
	got, err := etcdReader{e}.getMany(ctx, []string{key}, first.Header.Revision)
	must(t, err)
	if kv := got[key]; kv == nil || string(kv.Value) != "1" {
		t.Fatalf("read at revision %d = %v, want the value then", first.Header.Revision, kv)
	}
}

func TestEtcdTooBig(t *testing.T) {
	volumes := func(n int) []Op {
		var ops []Op
		for i := range n {
			ops = append(ops, Op{PutVolume: &VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%d", i))}})
		}
		return ops
	}
	workloads := func(n int) []Op {
		var ops []Op
		for i := range n {
			ops = append(ops, Op{PutWorkload: &Workload{UID: fmt.Sprintf("w%d", i), Node: "n1", Volumes: []cloud.VolumeID{"v1"}}})
		}
		return ops
	}
	tests := []struct {
		name string
		cfg  EtcdConfig
		ops  []Op
		says []string
	}{
		{"more records than the limit: refused before reading", EtcdConfig{MaxTxnOps: 10}, volumes(20),
			[]string{"batch of 20 ops", "at least 22 etcd operations", "limit of 10", "--max-txn-ops"}},
		{"more keys with the indexes than the limit", EtcdConfig{MaxTxnOps: 10}, workloads(5),
			[]string{"batch of 5 ops", "needs 18 etcd operations", "limit of 10"}},
		{"more bytes than the limit", EtcdConfig{MaxRequestBytes: 1000}, volumes(30),
			[]string{"batch of 30 ops", "limit of 1000", "--max-request-bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Prefix = freshPrefix()
			s := openEtcd(t, sharedEtcd(t), tt.cfg)
			must(t, s.PutVolume(VolumeSpec{ID: "v1"}))
			before := snap(t, s)
			err := s.Apply(tt.ops)
			if !errors.Is(err, ErrTooBig) {
				t.Fatalf("Apply = %v, want ErrTooBig", err)
			}
			for _, says := range tt.says {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("err = %q, want it to say %q", err, says)
				}
			}
			if after := snap(t, s); !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused batch changed the store:\n before %+v\n after  %+v", before, after)
			}
			must(t, s.Apply(tt.ops[:1])) // a batch that fits
		})
	}
}

// TestEtcdBigBatch: the etcd that etcdserver runs takes one Apply of a
// fleet of 10,000 volumes (far beyond etcd's default of 128 operations),
// and the lookups of one volume stay quick at that size.
func TestEtcdBigBatch(t *testing.T) {
	const v = 10_000
	s := openEtcd(t, sharedEtcd(t), EtcdConfig{Prefix: freshPrefix(), Timeout: 30 * time.Second})
	var ops []Op
	for i := range v / 10 {
		ops = append(ops, Op{PutNode: &NodeSpec{Name: cloud.NodeName(fmt.Sprintf("n%d", i))}})
	}
	for i := range v {
		ops = append(ops,
			Op{PutVolume: &VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%05d", i))}},
			Op{PutWorkload: &Workload{UID: fmt.Sprintf("w%05d", i), Node: cloud.NodeName(fmt.Sprintf("n%d", i%(v/10))),
				Volumes: []cloud.VolumeID{cloud.VolumeID(fmt.Sprintf("v%05d", i))}}})
	}
	start := time.Now()
	must(t, s.Apply(ops))
	t.Logf("one Apply of %d ops: %v", len(ops), time.Since(start))
	start = time.Now()
	for i := range 100 {
		vol := cloud.VolumeID(fmt.Sprintf("v%05d", i*97))
		nodes, err := s.DesiredNodes(vol)
		must(t, err)
		if want := []cloud.NodeName{cloud.NodeName(fmt.Sprintf("n%d", i*97%(v/10)))}; !reflect.DeepEqual(nodes, want) {
			t.Fatalf("DesiredNodes(%s) = %v, want %v", vol, nodes, want)
		}
	}
	per := time.Since(start) / 100
	t.Logf("DesiredNodes at %d volumes: %v each", v, per)
	if per > 100*time.Millisecond {
		t.Errorf("DesiredNodes takes %v at %d volumes: a scan, not a lookup?", per, v)
	}
	if vols, err := s.Volumes(); err != nil || len(vols) != v {
		t.Fatalf("Volumes: %d, %v; want %d", len(vols), err, v)
	}
	if on, err := s.WorkloadsOn("n7"); err != nil || len(on) != 10 {
		t.Fatalf("WorkloadsOn(n7): %d, %v; want 10", len(on), err)
	}
}

// TestEtcdOpenUnreachable: an etcd nobody runs is reported, naming the
// endpoint, within the dial timeout.
func TestEtcdOpenUnreachable(t *testing.T) {
	ports, err := freeLoopbackPort()
	must(t, err)
	ep := "http://" + ports
	start := time.Now()
	s, err := OpenEtcd(EtcdConfig{Endpoints: []string{ep}, DialTimeout: 500 * time.Millisecond})
	took := time.Since(start)
	if err == nil {
		_ = s.Close()
		t.Fatal("OpenEtcd of nothing succeeded")
	}
	if !strings.Contains(err.Error(), ep) || !strings.Contains(err.Error(), "did not answer within 500ms") {
		t.Fatalf("err = %q, want it to name %s and the timeout", err, ep)
	}
	if took > 3*time.Second {
		t.Fatalf("OpenEtcd took %v with a dial timeout of 500ms", took)
	}
}

// TestEtcdIndexesMatchMemory: the Etcd store's indexed lookups answer
// what the Memory store's do, through seeded random batches and status
// writes (randomIndexStep).
func TestEtcdIndexesMatchMemory(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 2))
	vols := []cloud.VolumeID{"v0", "v1", "v2", "v3", "v4", "v5"}
	nodes := []cloud.NodeName{"n0", "n1", "n2", "n3"}
	e, m := freshEtcd(t), NewMemory()
	for step := range 100 {
		ops, st := randomIndexStep(rng, vols, nodes)
		must(t, e.Apply(ops))
		must(t, m.Apply(ops))
		must(t, e.PutNodeStatus(st))
		must(t, m.PutNodeStatus(st))
		if got, want := lookups(t, e, vols, nodes), lookups(t, m, vols, nodes); got != want {
			t.Fatalf("seed %d, step %d: etcd\n%s\nmemory\n%s", seed, step, got, want)
		}
	}
}
