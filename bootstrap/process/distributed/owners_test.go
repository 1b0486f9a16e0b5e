package distributed

import (
	"fmt"
	"testing"

	"github.com/asynkron/protoactor-go/cluster"
)

func testMember(port int) *cluster.Member {
	return &cluster.Member{Host: "127.0.0.1", Port: int32(port), Id: fmt.Sprint(port), Kinds: []string{"volume", "node"}}
}

// TestOwnersSelectWhatEachGained: over a topology change every identity
// is gained by exactly one member, its new owner (the one the cluster's
// lookup places it on) if its owner changed, and by nobody otherwise; and
// every identity is owned by exactly one member.
func TestOwnersSelectWhatEachGained(t *testing.T) {
	a, b, c := testMember(1001), testMember(1002), testMember(1003)
	before := []*cluster.Member{a, b, c}
	after := []*cluster.Member{a, c} // b left
	os := map[string]*owners{}
	for _, m := range before {
		addr := m.Address()
		os[addr] = newOwners(func() string { return addr })
		os[m.Address()].update(before)
	}
	gained := map[string]func(string, string) bool{}
	for _, m := range after {
		gained[m.Address()] = os[m.Address()].update(after)
	}
	old, now := rendezvous(before), rendezvous(after)
	moved := 0
	for i := range 2000 {
		id := fmt.Sprintf("v%04d", i)
		ci := &cluster.ClusterIdentity{Kind: "volume", Identity: id}
		from, to := old.GetByClusterIdentity(ci), now.GetByClusterIdentity(ci)
		var by []string
		var owned int
		for addr, g := range gained {
			if g("volume", id) {
				by = append(by, addr)
			}
			if os[addr].mine()("volume", id) {
				owned++
			}
		}
		switch {
		case owned != 1:
			t.Fatalf("%s is owned by %d members", id, owned)
		case from != to && (len(by) != 1 || by[0] != to):
			t.Fatalf("%s moved from %s to %s; gained by %v", id, from, to, by)
		case from == to && len(by) != 0:
			t.Fatalf("%s stayed on %s; gained by %v", id, from, by)
		}
		if from != to {
			moved++
		}
	}
	// b's third of the identities moved, and nothing else.
	if moved < 500 || moved > 830 {
		t.Fatalf("%d of 2000 identities moved when one of three members left, want about a third", moved)
	}
	if sel := newOwners(func() string { return "x" }).mine(); sel != nil {
		t.Fatal("before any topology, a member must resync everything (nil), not a selection")
	}
}
