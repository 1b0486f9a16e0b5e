package distributed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// membership is tether's Proto.Actor cluster provider on etcd. It replaces
// Proto.Actor's own etcd provider, which under load lost the cluster for
// good (measured: a fleet start of 10,000 volumes over 3 members):
//
//   - its lease is 3 s and cannot be changed: a member whose etcd answered
//     slowly for 3 s vanished from every topology;
//   - it then dropped itself from its own topology, and Proto.Actor blocks
//     every member that leaves a topology for the life of the process, so
//     the member blocked itself and the others blocked it: nothing
//     recovered until every process restarted;
//   - its member map was written by its watch goroutine and read by others
//     without a lock, and a watch that failed started again from "now",
//     missing what changed in between.
//
// Here the lease's TTL is the member's to choose (MemberConfig.MemberTTL);
// a member always counts itself; the member map is owned by one goroutine;
// a watch resumes from the revision it had seen (or reads the whole list
// again when etcd compacted it); and a member whose lease is gone in spite
// of all this is told (lost), because the others have blocked it: it must
// leave and come back under a new identity (Member.Lost, `tether
// controller` does that by itself).
//
// Keys: prefix + member ID, the value the protobuf cluster.Member; a
// member's key lives as long as its lease.
type membership struct {
	endpoints []string
	tls       *tls.Config      // etcd's client TLS; nil: plain text
	client    *clientv3.Client // from StartMember or StartClient on
	prefix    string
	ttl       time.Duration
	log       *logrus.Logger
	// lost is called at most once, when a member's lease is gone.
	lost func(error)
	// peers, if set, has a member reach every member already registered
	// before it registers itself, for at most joinTimeout (peers.go).
	peers       *pinger
	joinTimeout time.Duration
	joinCtx     context.Context // ends the wait for the peers (SIGTERM)
	reach       reach           // peers' reachability (peercheck.go)
	pubMu       sync.Mutex      // serializes publish

	cl     *cluster.Cluster
	self   *cluster.Member // nil for a client
	lease  clientv3.LeaseID
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// newMembership checks the configuration; the cluster starts it, and
// only then does it connect to etcd: Proto.Actor's remote sets gRPC's
// global logger when it starts, which races with any gRPC connection
// already running.
func newMembership(endpoints []string, prefix string, ttl time.Duration, log *logrus.Logger, lost func(error)) (*membership, error) {
	if ttl < 2*time.Second {
		return nil, fmt.Errorf("cluster: member TTL %v: want at least 2s (etcd leases are whole seconds)", ttl)
	}
	if len(endpoints) == 0 {
		return nil, errors.New("cluster: no etcd endpoint")
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &membership{endpoints: endpoints, prefix: prefix, ttl: ttl, log: log, lost: lost, ctx: ctx, cancel: cancel}, nil
}

// closeOnError undoes a start that failed (the cluster never calls
// Shutdown then): its goroutines end and the client closes.
func (p *membership) closeOnError(err *error) {
	if *err == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
	_ = p.client.Close()
	p.client = nil
}

// connect makes the etcd client.
func (p *membership) connect() error {
	c, err := clientv3.New(clientv3.Config{Endpoints: p.endpoints, TLS: p.tls, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("cluster: etcd: %w", err)
	}
	p.client = c
	return nil
}

// StartMember registers this member under a lease and publishes the
// members etcd lists, itself always among them.
func (p *membership) StartMember(cl *cluster.Cluster) (err error) {
	p.cl = cl
	if err := p.connect(); err != nil {
		return err
	}
	defer p.closeOnError(&err)
	self, err := memberOf(cl)
	if err != nil {
		return err
	}
	p.self = self
	data, err := proto.Marshal(self)
	if err != nil {
		return err
	}
	if p.peers != nil {
		jctx, jcancel := context.WithTimeout(p.ctx, p.joinTimeout)
		if p.joinCtx != nil {
			stop := context.AfterFunc(p.joinCtx, jcancel)
			defer stop()
		}
		p.removePredecessors(jctx, self)
		err := p.peers.awaitPeers(jctx, self.Id, p.listMembers, p.log.Warnf)
		jcancel()
		if err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
	defer cancel()
	lease, err := p.client.Grant(ctx, int64((p.ttl+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("cluster: etcd lease: %w", err)
	}
	p.lease = lease.ID
	if _, err := p.client.Put(ctx, p.prefix+self.Id, string(data), clientv3.WithLease(lease.ID)); err != nil {
		return fmt.Errorf("cluster: registering %s: %w", self.Id, err)
	}
	ka, err := p.client.KeepAlive(p.ctx, lease.ID)
	if err != nil {
		return fmt.Errorf("cluster: keeping the lease: %w", err)
	}
	p.wg.Add(1)
	go p.keepAlive(ka)
	if err := p.startWatch(ctx); err != nil {
		return err
	}
	if p.peers != nil {
		p.wg.Add(1)
		go p.checkPeers()
	}
	return nil
}

// removePredecessors deletes the registrations of the members that
// advertised this member's own address and no longer listen there: a ping
// of their entry is answered there by this member itself, so the process
// that registered it is gone (killed, and started again as this one). A
// member restarted on its address otherwise waited in the join gate for
// its predecessor's lease to lapse, and so did every member restarted with
// it (a whole TTL). Entries at another address are left to their own
// successor or their lease: an address that answers as another member is
// not proof enough that its registrant is gone. Failures are logged only:
// the lease removes the entry in time anyway.
func (p *membership) removePredecessors(ctx context.Context, self *cluster.Member) {
	members, err := p.listMembers(ctx)
	if err != nil {
		p.log.Warnf("cluster: looking for this address's earlier member: %v", err)
		return
	}
	for id, m := range members {
		if id == self.Id || address(m) != address(self) {
			continue
		}
		if got, err := p.peers.answer(m); err != nil || got != self.Id {
			continue
		}
		c, cancel := context.WithTimeout(ctx, p.ttl)
		_, err := p.client.Delete(c, p.prefix+id)
		cancel()
		if err != nil {
			p.log.Warnf("cluster: removing member %s, gone from this member's address %s: %v", id, address(m), err)
			continue
		}
		p.log.Infof("cluster: removed member %s: it advertised this member's address %s, where this member answers now", id, address(m))
	}
}

// listMembers lists the registered members, for awaitPeers.
func (p *membership) listMembers(ctx context.Context) (map[string]*cluster.Member, error) {
	c, cancel := context.WithTimeout(ctx, p.ttl)
	defer cancel()
	members, _, err := p.list(c)
	return members, err
}

// StartClient publishes the members without registering (agents).
func (p *membership) StartClient(cl *cluster.Cluster) (err error) {
	p.cl = cl
	if err := p.connect(); err != nil {
		return err
	}
	defer p.closeOnError(&err)
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
	defer cancel()
	return p.startWatch(ctx)
}

// Shutdown stops watching and, for a member, revokes its lease (which
// deletes its key at once: the others take its actors over without
// waiting for the TTL). Bounded: with etcd down the lease lapses anyway.
func (p *membership) Shutdown(bool) error {
	p.cancel()
	p.wg.Wait()
	var err error
	if p.self != nil && p.lease != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err = p.client.Revoke(ctx, p.lease)
		cancel()
		if err != nil {
			err = fmt.Errorf("cluster: leaving (the lease lapses in %v): %w", p.ttl, err)
		}
	}
	if p.client != nil {
		err = errors.Join(err, p.client.Close())
	}
	return err
}

// keepAlive drains the lease's keep-alive answers; the channel closes when
// the lease is gone (or Shutdown cancelled it).
func (p *membership) keepAlive(ka <-chan *clientv3.LeaseKeepAliveResponse) {
	defer p.wg.Done()
	for range ka {
	}
	if p.ctx.Err() != nil {
		return
	}
	err := fmt.Errorf("cluster: member %s lost its etcd lease (no renewal within %v): the other members took its actors over and blocked it", p.self.Id, p.ttl)
	p.log.Error(err)
	p.once.Do(func() {
		if p.lost != nil {
			p.lost(err)
		}
	})
}

// startWatch reads the member list, publishes it, and follows it from the
// revision read.
func (p *membership) startWatch(ctx context.Context) error {
	members, rev, err := p.list(ctx)
	if err != nil {
		return err
	}
	p.publish(members)
	p.wg.Add(1)
	go p.watch(members, rev)
	return nil
}

// list reads every registered member and the revision of the read.
func (p *membership) list(ctx context.Context) (map[string]*cluster.Member, int64, error) {
	resp, err := p.client.Get(ctx, p.prefix, clientv3.WithPrefix())
	if err != nil {
		if p.tls == nil && errors.Is(err, context.DeadlineExceeded) {
			// An etcd that serves only TLS never completes a plain-text
			// handshake: it looks like one that does not answer (as the
			// store says when it opens).
			err = fmt.Errorf("%w (if etcd serves TLS only, dial it with its CA and a client certificate: --etcd-tls-ca, --etcd-tls-cert, --etcd-tls-key)", err)
		}
		return nil, 0, fmt.Errorf("cluster: listing members: %w", err)
	}
	out := map[string]*cluster.Member{}
	for _, kv := range resp.Kvs {
		m := &cluster.Member{}
		if err := proto.Unmarshal(kv.Value, m); err != nil || m.Id == "" {
			p.log.WithField("key", string(kv.Key)).Warn("cluster: ignoring a malformed member record")
			continue
		}
		out[m.Id] = m
	}
	return out, resp.Header.Revision, nil
}

// watch applies member changes from rev on, publishing after each batch.
// It owns members. A broken watch resumes where it stopped; a compacted
// one reads the list again.
func (p *membership) watch(members map[string]*cluster.Member, rev int64) {
	defer p.wg.Done()
	for p.ctx.Err() == nil {
		wc := p.client.Watch(clientv3.WithRequireLeader(p.ctx), p.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for resp := range wc {
			if err := resp.Err(); err != nil {
				if resp.CompactRevision == 0 && p.ctx.Err() == nil {
					p.log.WithError(err).Warn("cluster: member watch failed: reading the members again")
				}
				break
			}
			for _, ev := range resp.Events {
				id := string(ev.Kv.Key[len(p.prefix):])
				switch ev.Type {
				case clientv3.EventTypePut:
					m := &cluster.Member{}
					if err := proto.Unmarshal(ev.Kv.Value, m); err != nil || m.Id != id {
						p.log.WithField("key", string(ev.Kv.Key)).Warn("cluster: ignoring a malformed member record")
						continue
					}
					members[id] = m
				case clientv3.EventTypeDelete:
					delete(members, id)
				}
			}
			rev = resp.Header.Revision
			p.publish(members)
		}
		if p.ctx.Err() != nil {
			return
		}
		// Compacted, or the stream ended: read the list afresh (what was
		// missed is in it) and follow from there.
		ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
		fresh, r, err := p.list(ctx)
		cancel()
		if err != nil {
			p.log.WithError(err).Warn("cluster: member list unreadable: retrying")
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(time.Second): // a retry delay, not a synchronization
			}
			continue
		}
		members, rev = fresh, r
		p.publish(members)
	}
}

// publish hands the members (with this member, always: a member that
// left its own topology would block itself) to Proto.Actor.
func (p *membership) publish(members map[string]*cluster.Member) {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	if p.ctx.Err() != nil {
		return
	}
	if p.self != nil && p.peers != nil {
		members = p.reach.observe(members, p.self.Id)
	}
	out := make([]*cluster.Member, 0, len(members)+1)
	for _, m := range members {
		out = append(out, m)
	}
	if p.self != nil && members[p.self.Id] == nil {
		out = append(out, p.self)
	}
	slices.SortFunc(out, func(a, b *cluster.Member) int { return strings.Compare(a.Id, b.Id) })
	p.cl.MemberList.UpdateClusterTopology(out)
}

// memberOf describes this member as the others reach it.
func memberOf(cl *cluster.Cluster) (*cluster.Member, error) {
	host, portStr, err := net.SplitHostPort(cl.ActorSystem.Address())
	if err != nil {
		return nil, fmt.Errorf("cluster: this member's address %q: %w", cl.ActorSystem.Address(), err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("cluster: this member's port %q: %w", portStr, err)
	}
	kinds := cl.GetClusterKinds()
	slices.Sort(kinds)
	return &cluster.Member{Id: cl.ActorSystem.ID, Host: host, Port: int32(port), Kinds: kinds}, nil
}
