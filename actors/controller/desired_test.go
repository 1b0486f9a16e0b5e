package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// desiredByVolume (the bulk tell and the resync) must agree with the
// store's DesiredNodes (the one-volume tell) for every volume, order
// included: the first claim of an exclusive volume wins.
func TestDesiredByVolumeMatchesStore(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		st := store.NewMemory()
		nodes := []cloud.NodeName{"a", "b", "c", "d"}
		vols := []cloud.VolumeID{"v0", "v1", "v2", "v3", "v4", "v5"}
		for _, n := range nodes {
			must(t, st.PutNode(store.NodeSpec{Name: n}))
		}
		putDesired(t, st, rng, nodes, vols, 12, true)
		ws, err := st.Workloads()
		must(t, err)
		got := desiredByVolume(ws)
		for _, v := range vols {
			want, err := st.DesiredNodes(v)
			must(t, err)
			var names []string
			for _, n := range want {
				names = append(names, string(n))
			}
			if !slices.Equal(got[v], names) {
				t.Fatalf("seed %d: volume %s: bulk %v, store %v", seed, v, got[v], names)
			}
		}
		// The agents' messages from one read of each table are those
		// read node by node (a node without workloads included).
		all := append(slices.Clone(nodes), "ghost")
		msgs, err := agentMessages(st, all)
		must(t, err)
		for i, n := range all {
			want, err := nodeWorkloads(&env{store: st}, n)
			must(t, err)
			if !proto.Equal(msgs[i], want) {
				t.Fatalf("seed %d: node %s: bulk %v, one by one %v", seed, n, msgs[i], want)
			}
		}
	}
}

// On a remote store a batch of bulkTell documents or more validates against
// one snapshot of the store (reader): it must refuse and describe exactly
// what the document-by-document path does, which the store in one process
// takes.
func TestBigBatchValidatesLikeSmall(t *testing.T) {
	for _, wrap := range []func(*store.Memory) store.Store{nil, remote} {
		t.Run(fmt.Sprint("remote=", wrap != nil), func(t *testing.T) { testBigBatch(t, wrap) })
	}
}

func testBigBatch(t *testing.T, wrap func(*store.Memory) store.Store) {
	r := newRigStore(t, wrap)
	r.node("n1")
	batch := func(mode cloud.AccessMode, node cloud.NodeName) []Change {
		var out []Change
		for i := range bulkTell {
			out = append(out, Change{Volume: &store.VolumeSpec{ID: cloud.VolumeID(fmt.Sprintf("v%03d", i)), Mode: cloud.Exclusive}})
		}
		out[7].Volume.Mode = mode
		out = append(out, Change{Workload: &store.Workload{UID: "w1", Node: node, Volumes: []cloud.VolumeID{"v001", "v002"}}})
		return out
	}
	r.cloud.CreateVolume("v001", cloud.Exclusive)
	r.cloud.CreateVolume("v002", cloud.Exclusive)
	got, err := r.ctl.ApplyAll(batch(cloud.Exclusive, "n1"))
	must(t, err)
	if len(got) != bulkTell+1 || got[0] != "volume/v000 created" || got[bulkTell] != "workload/w1 created" {
		t.Fatalf("first apply: %d lines, %q ... %q", len(got), got[0], got[len(got)-1])
	}
	got, err = r.ctl.ApplyAll(batch(cloud.Exclusive, "n1"))
	must(t, err)
	for _, line := range got {
		if !strings.HasSuffix(line, " unchanged") {
			t.Fatalf("second apply of the same batch: %q", line)
		}
	}
	if _, err := r.ctl.ApplyAll(batch(cloud.MultiNode, "n1")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `volume "v007" is ReadWriteOnce and cannot become ReadWriteMany`) {
		t.Fatalf("mode change in a big batch: %v", err)
	}
	if _, err := r.ctl.ApplyAll(batch(cloud.Exclusive, "n9")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `unknown node "n9"`) {
		t.Fatalf("unknown node in a big batch: %v", err)
	}
	if _, err := r.ctl.Validate(batch(cloud.MultiNode, "n1")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("dry run of a mode change in a big batch: %v", err)
	}
	r.eventually("w1's volumes attached", func() bool { return r.settled("v001", "n1")() && r.settled("v002", "n1")() })
}

// The resync's pacing wait runs on the controller's clock and gives up
// when the controller stops.
func TestResyncWaitFollowsClockAndStop(t *testing.T) {
	r := newRig(t)
	e := r.ctl.env
	done := make(chan bool, 1)
	go func() { done <- e.wait(3 * time.Second) }()
	r.eventually("the wait armed its timer", func() bool {
		r.clk.Advance(time.Second) // steps: the timer may be armed after any of them
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("wait returned false while the controller runs")
			}
			return true
		default:
			return false
		}
	})
	go func() { done <- e.wait(time.Hour) }()
	r.ctl.cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("wait returned true after the controller stopped")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return when the controller stopped")
	}
}

// A batch reads whole tables from bulkTell objects on a remote store, and
// only from bulkLocal on in one process.
func TestBulkThreshold(t *testing.T) {
	local, far := newRig(t), newRigStore(t, remote)
	for _, tc := range []struct {
		n          int
		local, far bool
	}{
		{bulkTell - 1, false, false},
		{bulkTell, false, true},
		{bulkLocal - 1, false, true},
		{bulkLocal, true, true},
	} {
		if got := local.ctl.bulk(tc.n); got != tc.local {
			t.Errorf("bulk(%d) in one process = %v, want %v", tc.n, got, tc.local)
		}
		if got := far.ctl.bulk(tc.n); got != tc.far {
			t.Errorf("bulk(%d) on a remote store = %v, want %v", tc.n, got, tc.far)
		}
	}
}

// putDesired writes seeded random desired state: vols of every access mode
// (by index: exclusive, multi-node, ReadOnlyMany), then 30 puts or deletes
// of workloads named among uids names, on nodes, each using some of vols
// (some of them read-only when readOnly).
func putDesired(t *testing.T, st store.Store, rng *rand.Rand, nodes []cloud.NodeName, vols []cloud.VolumeID, uids int, readOnly bool) {
	t.Helper()
	for i, v := range vols {
		spec := store.VolumeSpec{ID: v, Mode: cloud.Exclusive}
		switch i % 3 {
		case 1:
			spec.Mode = cloud.MultiNode
		case 2:
			spec.Mode, spec.ReadOnly = cloud.MultiNode, true
		}
		must(t, st.PutVolume(spec))
	}
	for i := range 30 {
		w := store.Workload{UID: fmt.Sprintf("w%d", rng.IntN(uids)), Node: nodes[rng.IntN(len(nodes))]}
		for _, v := range vols {
			if rng.IntN(3) == 0 {
				w.Volumes = append(w.Volumes, v)
				if readOnly && rng.IntN(2) == 0 {
					w.ReadOnly = append(w.ReadOnly, v)
				}
			}
		}
		if i%7 == 6 {
			must(t, st.DeleteWorkload(w.UID))
			continue
		}
		must(t, st.PutWorkload(w))
	}
}
