package distributed

import (
	"sync"

	"github.com/asynkron/protoactor-go/cluster"
)

// owners follows which member owns each identity, as the cluster's
// identity lookup (disthash) places them: rendezvous hashing over the
// members of the topology. A member resyncs only what it owns
// (Controller.ResyncWhere): on a topology change what it gained, on a
// connection (re)established everything it owns.
type owners struct {
	self func() string // this member's address (known once remote started)

	mu   sync.Mutex
	now  *cluster.Rendezvous // the latest topology; nil before the first
	seen bool
}

func newOwners(self func() string) *owners { return &owners{self: self} }

func rendezvous(members []*cluster.Member) *cluster.Rendezvous {
	r := cluster.NewRendezvous()
	r.UpdateMembers(members)
	return r
}

// owns reports whether self owns (kind, identity) by r; nil r: nobody.
func (o *owners) owns(r *cluster.Rendezvous, kind, identity string) bool {
	return r != nil && r.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: kind, Identity: identity}) == o.self()
}

// update takes a new topology and returns the selection of the identities
// this member owns by it and did not own by the one before.
func (o *owners) update(members []*cluster.Member) func(kind, identity string) bool {
	next := rendezvous(members)
	o.mu.Lock()
	prev := o.now
	o.now, o.seen = next, true
	o.mu.Unlock()
	return func(kind, identity string) bool {
		return o.owns(next, kind, identity) && !o.owns(prev, kind, identity)
	}
}

// mine returns the selection of the identities this member owns by the
// latest topology; before any topology, everything (nothing is known:
// asking too much is safe, too little is not).
func (o *owners) mine() func(kind, identity string) bool {
	o.mu.Lock()
	now, seen := o.now, o.seen
	o.mu.Unlock()
	if !seen {
		return nil
	}
	return func(kind, identity string) bool { return o.owns(now, kind, identity) }
}
