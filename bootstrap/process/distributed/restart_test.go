package distributed_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
)

// A member SIGKILLed and started again on its advertised address removes
// its predecessor's registration as it joins, instead of waiting for that
// lease to lapse: etcd, the ground truth, no longer lists the old member
// while its lease still runs. The other member's entry is left alone, and
// the cluster keeps serving.
func TestFleetRestartedMemberRemovesItsPredecessor(t *testing.T) {
	r := startRig(t, 2, 2)
	r.apply(nodeDoc(r.nodes[0]), nodeDoc(r.nodes[1]))
	r.place(map[string]cloud.NodeName{"w-0": r.nodes[0], "w-1": r.nodes[1]})
	r.converge("fleet start", 60*time.Second)

	leases := r.memberLeases()
	if len(leases) != 2 {
		t.Fatalf("%d members registered, want 2", len(leases))
	}
	before := r.memberIDs()
	if err := r.f.KillController(1); err != nil {
		t.Fatal(err)
	}
	if err := r.f.StartController(1); err != nil {
		t.Fatal(err)
	}
	now := r.memberIDs()
	var gone []string
	for _, id := range before {
		if !slices.Contains(now, id) {
			gone = append(gone, id)
		}
	}
	if len(gone) != 1 || len(now) != 2 {
		t.Fatalf("members before the restart %v, after %v: want exactly the killed one replaced", before, now)
	}
	// Its lease still runs: its successor removed it, not the lease.
	c := r.etcd()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ttl, err := c.TimeToLive(ctx, leases[gone[0]])
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL <= 0 {
		t.Fatalf("the killed member %s's lease lapsed (TTL %d) before its successor joined: the successor waited for the lease instead of removing its entry (or the restart took longer than a lease)", gone[0], ttl.TTL)
	}
	r.place(map[string]cloud.NodeName{"w-0": r.nodes[1], "w-2": r.nodes[0]})
	r.converge("member 1 restarted, workloads moved and added", 60*time.Second)
}

// memberLeases maps each registered member's ID to its lease.
func (r *rig) memberLeases() map[string]clientv3.LeaseID {
	out := map[string]clientv3.LeaseID{}
	for _, kv := range r.memberRecordKVs() {
		out[strings.TrimPrefix(string(kv.Key), memberRecords)] = clientv3.LeaseID(kv.Lease)
	}
	return out
}

// When a member dies, the actors of its nodes are activated on the others,
// which know nothing of those nodes' agents until they hear from them: an
// agent beats at every topology change, so a change for its node reaches
// it at once, not a heartbeat period later (here 45 s, longer than the
// whole test's wait). The member killed is the one the placement gives a
// node's actor to.
func TestFleetAgentsFindMovedNodeActorsAtOnce(t *testing.T) {
	r := startRigWith(t, 2, 2, func(c *distributed.FleetConfig) { c.Heartbeat = 45 * time.Second })
	r.apply(nodeDoc(r.nodes[0]), nodeDoc(r.nodes[1]))
	r.place(map[string]cloud.NodeName{"w-0": r.nodes[0], "w-1": r.nodes[1]})
	r.converge("fleet start", 60*time.Second)
	owner := r.ownerOf(controller.KindNode, string(r.nodes[0]))
	victim := slices.IndexFunc([]int{0, 1}, func(i int) bool { return r.f.ControllerAddr(i) == owner })
	if victim < 0 {
		t.Fatalf("node %s's actor is placed at %s, no member's address", r.nodes[0], owner)
	}
	if err := r.f.KillController(victim); err != nil {
		t.Fatal(err)
	}
	// Both nodes get a workload; the dead member's node actors move once
	// its lease lapses (DefaultMemberTTL).
	r.place(map[string]cloud.NodeName{"w-2": r.nodes[0], "w-3": r.nodes[1]})
	r.converge(fmt.Sprintf("controller %d (holding node %s's actor) SIGKILLed, a workload added on each node", victim, r.nodes[0]), distributed.DefaultMemberTTL+20*time.Second)
}

// ownerOf is the address of the member the placement gives (kind, id) to,
// by the members etcd lists: Proto.Actor's rendezvous hash.
func (r *rig) ownerOf(kind, id string) string {
	r.t.Helper()
	var members []*cluster.Member
	for _, kv := range r.memberRecordKVs() {
		m := &cluster.Member{}
		if err := proto.Unmarshal(kv.Value, m); err != nil {
			r.t.Fatal(err)
		}
		members = append(members, m)
	}
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(members)
	return rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: kind, Identity: id})
}
