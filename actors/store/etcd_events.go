package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/actors/events"
)

// Etcd's event log lives beside the store, under its own prefix (the
// store's prefix without its last "/", then "-events/": "/tether/store/"
// keeps its events under "/tether/store-events/"), so that nothing that
// reads or watches the store's range ever sees an event:
//
//	E <kind>/<name>\x00<stamp>-<writer>    the event's JSON (eventRecord)
//
// stamp is the writer's clock in nanoseconds (16 hex digits, strictly
// increasing per writer), writer a random name of the process's log, so
// writers never collide and a name's keys are in time order. Events are
// written with a lease: one per reuse window, as Kubernetes' apiserver
// does (not one per event: a lease is a raft write of its own and a
// record etcd keeps), granted for TTL plus that window so that the last
// event of a window still lives its TTL. The bound per name is a prune in
// the flush that wrote to it: one read of each name's newest keys, one
// delete of the range older than them.
type EtcdEvents struct {
	c       *clientv3.Client
	closer  *Etcd // the store OpenEtcdEvents opened for this log alone
	prefix  string
	opts    EventOptions
	timeout time.Duration
	maxOps  int
	writer  string

	mu      sync.Mutex
	stamp   int64
	lease   clientv3.LeaseID
	leaseAt time.Time
}

var _ events.Log = (*EtcdEvents)(nil)

// maxLeaseReuse caps the window of one lease (Kubernetes' default).
const maxLeaseReuse = time.Minute

// EventsPrefix is where the events of a store under prefix live.
func EventsPrefix(prefix string) string {
	if prefix == "" {
		prefix = DefaultEtcdPrefix
	}
	return strings.TrimSuffix(prefix, "/") + "-events/"
}

// Events returns the event log beside e, on e's connection; opts must be
// valid.
func (e *Etcd) Events(opts EventOptions) (*EtcdEvents, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	return &EtcdEvents{c: e.c, prefix: EventsPrefix(e.cfg.Prefix), opts: opts.withDefaults(),
		timeout: e.cfg.Timeout, maxOps: e.cfg.MaxTxnOps, writer: hex.EncodeToString(id[:])}, nil
}

// OpenEtcdEvents connects to etcd (as OpenEtcd) for the event log beside
// the store of cfg alone (a node agent writes events, not the store).
// Close it.
func OpenEtcdEvents(cfg EtcdConfig, opts EventOptions) (*EtcdEvents, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	st, err := OpenEtcd(cfg)
	if err != nil {
		return nil, err
	}
	l, err := st.Events(opts)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	l.closer = st
	return l, nil
}

// Close closes the connection OpenEtcdEvents opened (nothing for a log of
// Etcd.Events: the store's connection is the store's to close).
func (l *EtcdEvents) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// leaseReuse is how long one lease serves: 5% of the TTL, at most a minute.
func (l *EtcdEvents) leaseReuse() time.Duration { return min(l.opts.TTL/20, maxLeaseReuse) }

// leaseFor returns the lease of the current window, granting one if the
// last is older than the window.
func (l *EtcdEvents) leaseFor(ctx context.Context, now time.Time) (clientv3.LeaseID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reuse := l.leaseReuse()
	if l.lease != 0 && now.Before(l.leaseAt.Add(reuse)) {
		return l.lease, nil
	}
	secs := int64((l.opts.TTL + reuse + time.Second - 1) / time.Second)
	g, err := l.c.Grant(ctx, secs)
	if err != nil {
		return 0, err
	}
	l.lease, l.leaseAt = g.ID, now
	return g.ID, nil
}

// dropLease forgets a lease etcd no longer has.
func (l *EtcdEvents) dropLease(id clientv3.LeaseID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lease == id {
		l.lease = 0
	}
}

func (l *EtcdEvents) objectPrefix(k events.Kind, name string) string {
	return l.prefix + string(k) + "/" + name + "\x00"
}

// queryPrefix is the key range of q.
func (l *EtcdEvents) queryPrefix(q events.Query) string {
	switch {
	case q.Name != "":
		return l.objectPrefix(q.Kind, q.Name)
	case q.Kind != "":
		return l.prefix + string(q.Kind) + "/"
	}
	return l.prefix
}

// AppendEvents implements events.Log: the events in one transaction (or
// as few as MaxTxnOps allows), then the prune of the names written to.
func (l *EtcdEvents) AppendEvents(ctx context.Context, evs []events.Event) error {
	ops := make([]clientv3.Op, 0, len(evs))
	touched := map[string]bool{}
	now := l.opts.Now()
	for _, e := range evs {
		if err := checkEvent(e); err != nil {
			return err
		}
		v, err := encodeEvent(e)
		if err != nil {
			return err
		}
		prefix := l.objectPrefix(e.Object.Kind, e.Object.Name)
		touched[prefix] = true
		ops = append(ops, clientv3.OpPut(prefix+l.nextStamp(now), string(v)))
	}
	if len(ops) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	for try := 0; ; try++ {
		lease, err := l.leaseFor(ctx, now)
		if err != nil {
			return fmt.Errorf("store: events: lease: %w", err)
		}
		err = l.txns(ctx, withLease(ops, lease))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && try == 0 {
			l.dropLease(lease) // etcd lost it (expired while idle, or restored): a new one
			continue
		}
		if err != nil {
			return fmt.Errorf("store: append %d events: %w", len(evs), err)
		}
		break
	}
	return l.prune(ctx, slices.Sorted(maps.Keys(touched)))
}

// nextStamp is the key suffix of the next event written at now.
func (l *EtcdEvents) nextStamp(now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stamp = max(l.stamp+1, now.UnixNano())
	return fmt.Sprintf("%016x-%s", uint64(l.stamp), l.writer)
}

func withLease(ops []clientv3.Op, lease clientv3.LeaseID) []clientv3.Op {
	out := make([]clientv3.Op, len(ops))
	for i, op := range ops {
		out[i] = clientv3.OpPut(string(op.KeyBytes()), string(op.ValueBytes()), clientv3.WithLease(lease))
	}
	return out
}

// txns commits ops in transactions of at most maxOps.
func (l *EtcdEvents) txns(ctx context.Context, ops []clientv3.Op) error {
	for len(ops) > 0 {
		n := min(len(ops), l.maxOps)
		if _, err := l.c.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// prune deletes the events of each name of prefixes older than its
// newest PerObject: one transaction reads the newest PerObject+1 keys of
// each, one deletes the ranges up to the oldest of those.
func (l *EtcdEvents) prune(ctx context.Context, prefixes []string) error {
	gets := make([]clientv3.Op, len(prefixes))
	for i, p := range prefixes {
		gets[i] = clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(int64(l.opts.PerObject+1)))
	}
	var dels []clientv3.Op
	for len(gets) > 0 {
		n := min(len(gets), l.maxOps)
		resp, err := l.c.Txn(ctx).Then(gets[:n]...).Commit()
		if err != nil {
			return fmt.Errorf("store: prune events: %w", err)
		}
		for i, r := range resp.Responses {
			kvs := r.GetResponseRange().Kvs
			if len(kvs) > l.opts.PerObject {
				last := string(kvs[l.opts.PerObject].Key)
				dels = append(dels, clientv3.OpDelete(prefixes[len(prefixes)-len(gets)+i], clientv3.WithRange(last+"\x00")))
			}
		}
		gets = gets[n:]
	}
	if err := l.txns(ctx, dels); err != nil {
		return fmt.Errorf("store: prune events: %w", err)
	}
	return nil
}

// ListEvents implements events.Log: one read of q's range, in commit
// order (revision, then the writer's stamp within a transaction); the
// cursor is the revision read at.
func (l *EtcdEvents) ListEvents(ctx context.Context, q events.Query) ([]events.Event, uint64, error) {
	if err := checkQuery(q); err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	resp, err := l.c.Get(ctx, l.queryPrefix(q), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("store: list events: %w", err)
	}
	kvs := resp.Kvs
	slices.SortStableFunc(kvs, func(a, b *mvccpb.KeyValue) int {
		return cmp.Or(cmp.Compare(a.ModRevision, b.ModRevision), bytes.Compare(stampOf(a.Key), stampOf(b.Key)))
	})
	all := make([]events.Event, 0, len(kvs))
	for _, kv := range kvs {
		e, err := decodeEvent(kv.Value)
		if err != nil {
			return nil, 0, err
		}
		all = append(all, e)
	}
	return l.opts.readFilter(all, q), uint64(resp.Header.Revision), nil
}

// stampOf is the stamp part of an event key.
func stampOf(key []byte) []byte {
	if i := bytes.LastIndexByte(key, 0); i >= 0 {
		return key[i+1:]
	}
	return nil
}

// WatchEvents implements events.Log with an etcd watch of q's range from
// the revision after cursor: events of every writer, in commit order.
func (l *EtcdEvents) WatchEvents(ctx context.Context, q events.Query, cursor uint64, fn func(events.Event)) error {
	if err := checkQuery(q); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wc := l.c.Watch(ctx, l.queryPrefix(q), clientv3.WithPrefix(), clientv3.WithRev(int64(cursor)+1))
	for resp := range wc {
		if err := resp.Err(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("store: watch events: %w", err)
		}
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			e, err := decodeEvent(ev.Kv.Value)
			if err != nil {
				return err
			}
			if q.Matches(e) {
				fn(e)
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("store: watch events: etcd closed the watch")
}
