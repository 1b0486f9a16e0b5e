package distributed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/tether/tether/messages"
)

// A member serves only once its peers can reach it. Registering in etcd
// is not enough: a member the others cannot reach over remote (started
// without the remote TLS flags, with another CA, behind a wrong
// --remote-advertise, partitioned from its peers but not from etcd) would
// be given actors by the placement that no message could reach, and the
// whole cluster would stall on them. So before it registers, a member has
// a round trip over remote with every member already registered: its
// request reaches the peer's peer actor (the peer accepted this member's
// connection) and the answer comes back (this member accepted the peer's:
// Proto.Actor answers over the answerer's own connection to the asker's
// advertised address). Members that do not answer within the join bound
// keep it out; it says which and why, and its start fails.

// peerActor is the name of every member's peer actor.
const peerActor = "tether-peer"

// DefaultJoinTimeout bounds how long a member tries to reach its peers
// before it gives up joining (MemberConfig.JoinTimeout).
const DefaultJoinTimeout = time.Minute

// pingTimeout bounds one round trip to a peer.
const pingTimeout = 3 * time.Second

// spawnPeerActor starts this member's peer actor, which answers PeerPing.
func spawnPeerActor(sys *actor.ActorSystem) error {
	id := sys.ID
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.PeerPing); ok {
			c.Respond(&messages.PeerPong{Id: id})
		}
	})
	_, err := sys.Root.SpawnNamed(props, peerActor)
	return err
}

// pinger has round trips with peers from sys.
type pinger struct {
	sys     *actor.ActorSystem
	timeout time.Duration
}

// ping has one round trip with member m: its address answers as m.
func (p pinger) ping(m *cluster.Member) error {
	id, err := p.answer(m)
	if err != nil {
		return err
	}
	if id != m.Id {
		return fmt.Errorf("%s answered as member %s, not as %s (that member's lease lapses, or its successor at that address removes it, before this one joins)", address(m), id, m.Id)
	}
	return nil
}

// answer has one round trip with member m's address and returns the ID of
// the member that answered there.
func (p pinger) answer(m *cluster.Member) (string, error) {
	addr := address(m)
	f := p.sys.Root.RequestFuture(actor.NewPID(addr, peerActor), &messages.PeerPing{From: p.sys.ID}, p.timeout)
	res, err := f.Result()
	if err != nil {
		return "", fmt.Errorf("no answer from %s within %v (%v)", addr, p.timeout, err)
	}
	pong, ok := res.(*messages.PeerPong)
	if !ok {
		return "", fmt.Errorf("%s answered %T, not as a member", addr, res)
	}
	return pong.Id, nil
}

// address is where m's actors listen (its advertised address).
func address(m *cluster.Member) string { return net.JoinHostPort(m.Host, strconv.Itoa(int(m.Port))) }

// pingAll pings every member of members but self, at once: the error of
// each (nil: a round trip).
func (p pinger) pingAll(members map[string]*cluster.Member, self string) map[string]error {
	type result struct {
		id  string
		err error
	}
	out := make(chan result)
	n := 0
	for id, m := range members {
		if id == self {
			continue
		}
		n++
		go func() { out <- result{id, p.ping(m)} }()
	}
	errs := make(map[string]error, n)
	for range n {
		r := <-out
		errs[r.id] = r.err
	}
	return errs
}

// unreachable pings every member of members but self, at once, and
// describes those without a round trip ("" if none).
func (p pinger) unreachable(members map[string]*cluster.Member, self string) string {
	var bad []string
	for id, err := range p.pingAll(members, self) {
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", id, err))
		}
	}
	slices.Sort(bad)
	return strings.Join(bad, "; ")
}

// ErrPeersUnreachable: a member gave up joining: the members already
// there did not answer it over remote within its join bound.
var ErrPeersUnreachable = errors.New("cluster: the members already there cannot be reached over remote")

// awaitPeers returns once this member (self) has had a round trip with
// every member list gives (read again before every try: a member that
// died leaves it with its lease), or fails once ctx ends, naming the
// members it could not reach and what to check.
func (p pinger) awaitPeers(ctx context.Context, self string, list func(context.Context) (map[string]*cluster.Member, error), logf func(string, ...any)) error {
	var last string
	for tries := 1; ; tries++ {
		members, err := list(ctx)
		if err == nil {
			if last = p.unreachable(members, self); last == "" {
				return nil
			}
			if tries == 1 || tries%5 == 0 {
				logf("cluster: not joining yet: no round trip over remote with %s", last)
			}
		} else {
			last = "listing the members in etcd: " + err.Error()
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%s); this member holds no actors. Check that every member runs with the same --remote-tls-cert/-key/-ca (or none), that --remote-advertise is an address the others reach, and that no firewall or partition stands between them", ErrPeersUnreachable, last)
		case <-t.C:
		}
	}
}
