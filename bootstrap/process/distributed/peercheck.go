package distributed

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
)

// Once joined, a member keeps having round trips with its peers. A peer
// without one for longer than a lease (it died without its lease lapsing
// yet, or it is cut off from this member but not from etcd) is left out
// of the topology this member gives Proto.Actor: placement never lands an
// identity on a member this one cannot reach. And a member that can reach
// no majority of the members etcd lists (ties go to the side of the
// member with the lowest ID, so that of two halves exactly one stays)
// gives up: its lost function is called, its actors stop, and `tether
// controller` tries to join again, which it cannot until its peers answer
// (peers.go), and then exits non-zero.

// reach is what a member knows of its peers' reachability.
type reach struct {
	mu      sync.Mutex
	current map[string]*cluster.Member // as etcd lists them, last published
	seen    map[string]time.Time       // last round trip, or when first listed
	stale   map[string]bool            // no round trip for longer than a lease
}

// observe records the members etcd lists now and returns them without
// the stale ones (this member, self, always stays).
func (r *reach) observe(members map[string]*cluster.Member, self string) map[string]*cluster.Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current = maps.Clone(members)
	out := make(map[string]*cluster.Member, len(members))
	for id, m := range members {
		if id == self || !r.stale[id] {
			out[id] = m
		}
	}
	return out
}

// peerCheckEvery is how often a member pings its peers: a third of a
// lease, at least a second.
func peerCheckEvery(ttl time.Duration) time.Duration { return max(time.Second, ttl/3) }

// checkPeers runs until the membership stops: the round trips, the
// topology without stale peers, and the majority rule.
func (p *membership) checkPeers() {
	defer p.wg.Done()
	t := time.NewTicker(peerCheckEvery(p.ttl))
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		if err := p.checkPeersOnce(time.Now()); err != nil {
			p.log.Error(err)
			p.once.Do(func() {
				if p.lost != nil {
					p.lost(err)
				}
			})
			return
		}
	}
}

// checkPeersOnce pings the peers once; it re-publishes the topology if
// the stale peers changed, and fails if this member is on the losing side.
func (p *membership) checkPeersOnce(now time.Time) error {
	r := &p.reach
	r.mu.Lock()
	members := maps.Clone(r.current)
	r.mu.Unlock()
	errs := p.peers.pingAll(members, p.self.Id)
	r.mu.Lock()
	if r.seen == nil {
		r.seen = map[string]time.Time{}
	}
	stale := map[string]bool{}
	for id := range r.current {
		if id == p.self.Id {
			continue
		}
		if err, asked := errs[id]; asked && err == nil {
			r.seen[id] = now
		} else if _, ok := r.seen[id]; !ok {
			r.seen[id] = now // newly listed: a lease to answer
		}
		if now.Sub(r.seen[id]) > p.ttl {
			stale[id] = true
		}
	}
	for id := range r.seen {
		if _, ok := r.current[id]; !ok {
			delete(r.seen, id)
		}
	}
	changed := !maps.Equal(stale, r.stale)
	r.stale = stale
	current := maps.Clone(r.current)
	r.mu.Unlock()
	if changed {
		var ids []string
		for id := range stale {
			ids = append(ids, fmt.Sprintf("%s (%v)", id, errs[id]))
		}
		slices.Sort(ids)
		if len(ids) > 0 {
			p.log.Warnf("cluster: no round trip over remote for longer than %v with %s: leaving them out of the placement", p.ttl, strings.Join(ids, ", "))
		}
		p.publish(current)
	}
	return p.losing(current, stale)
}

// losing fails if the members this one reaches (itself and the peers not
// stale) are no majority of those etcd lists, or exactly half without the
// lowest member ID.
func (p *membership) losing(current map[string]*cluster.Member, stale map[string]bool) error {
	n := len(current)
	if _, ok := current[p.self.Id]; !ok {
		n++
	}
	reached := n - len(stale)
	lowest := p.self.Id
	for id := range current {
		lowest = min(lowest, id)
	}
	if 2*reached > n || (2*reached == n && !stale[lowest]) {
		return nil
	}
	ids := slices.Sorted(maps.Keys(stale))
	return fmt.Errorf("%w: member %s has had no round trip over remote with %s for longer than a lease (%v), so it reaches %d of %d members: it gives its actors up to the others", ErrPeersUnreachable, p.self.Id, strings.Join(ids, ", "), p.ttl, reached, n)
}
