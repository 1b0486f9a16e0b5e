package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/cloud"
)

// A cached Etcd (EtcdConfig.Cache) serves its reads from a copy of the
// store's keys in memory, fed by an etcd watch, as Kubernetes' informers
// and its watch cache do; reads stay linearizable all the same, as
// Kubernetes' consistent reads from cache are:
//
//   - Every write of the store (Apply, a node status, an intent, a claim)
//     also puts the key meta/last in its transaction, so meta/last's
//     ModRevision is the revision of the store's latest write, and the
//     watch tells it like any other key.
//   - A read first asks etcd for meta/last (one small range) and waits
//     until the cache has applied that revision: the cache then holds
//     every write acknowledged before the read began, as a read from etcd
//     would. Concurrent reads share one such request: a reader joins the
//     next request to start after it arrived (one started before may have
//     been answered before the reader's call began), so a busy member
//     sends about one per round trip, whatever its number of reads.
//   - A write's own reads (what it replaces, guarded by the compares of
//     its transaction) come from the cache without asking: a stale one
//     fails its compare, and the retry asks first. The cache waits for the
//     process's own latest write first, so that a writer's next write does
//     not fail on its own previous one.
//
// The event log lives beside the store, under a prefix of its own
// (etcd_events.go), so its keys are neither watched nor kept.

// cacheKV is one key's value in the cache.
type cacheKV struct {
	key   string
	value []byte
	mod   int64
}

func lessKV(a, b cacheKV) bool { return a.key < b.key }

func (kv cacheKV) proto() *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: []byte(kv.key), Value: kv.value, ModRevision: kv.mod}
}

// etcdCache is an Etcd's copy of its keys.
type etcdCache struct {
	e *Etcd

	mu      sync.RWMutex
	changed *sync.Cond // on mu's write lock: applied or err changed
	tree    *btree.BTreeG[cacheKV]
	applied int64 // every store write up to this revision is in tree
	ready   bool  // tree was listed and is being watched
	closed  bool

	own ownRevision // the revision of this process's latest write

	onDesired func([]cloud.VolumeID) // see Etcd.OnDesiredChange

	bar barrier

	cancel context.CancelFunc
	done   chan struct{}
}

// cacheListPage is how many keys one request of a listing reads.
const cacheListPage = 5000

// startCache lists the store's keys and watches them from there on; it
// returns once the listing is in memory.
func (e *Etcd) startCache() error {
	c := &etcdCache{e: e, tree: btree.NewG(32, lessKV), done: make(chan struct{})}
	c.changed = sync.NewCond(&c.mu)
	c.bar.fetch, c.bar.timeout = c.lastWrite, e.cfg.Timeout
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	listCtx, cancelList := context.WithTimeout(ctx, e.cfg.DialTimeout)
	rev, err := c.list(listCtx)
	cancelList()
	if err != nil {
		cancel()
		return e.ioError("list the store for its cache", e.cfg.DialTimeout, err)
	}
	e.cache = c
	go c.run(ctx, rev)
	return nil
}

// list replaces the tree with the store's keys at one revision, returned.
func (c *etcdCache) list(ctx context.Context) (int64, error) {
	tree := btree.NewG(32, lessKV)
	prefix := string(c.e.k)
	start, rev := prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(cacheListPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.e.c.Get(ctx, start, opts...)
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			tree.ReplaceOrInsert(cacheKV{key: string(kv.Key), value: kv.Value, mod: kv.ModRevision})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	c.mu.Lock()
	old, notify := c.tree, c.onDesired
	c.tree, c.applied, c.ready = tree, rev, true
	c.changed.Broadcast()
	c.mu.Unlock()
	if notify != nil {
		// Listed again after the watch ended: what changed meanwhile was
		// never told as an event.
		if touched := c.e.desiredDiff(old, tree); len(touched) > 0 {
			notify(touched)
		}
	}
	return rev, nil
}

// desiredDiff are the volumes whose desired state differs between two
// copies of the store (desiredVolumes of every record that differs).
func (e *Etcd) desiredDiff(a, b *btree.BTreeG[cacheKV]) []cloud.VolumeID {
	var out []cloud.VolumeID
	for _, prefix := range []string{e.k.volumes(), e.k.workloads()} {
		lo, hi := cacheKV{key: prefix}, cacheKV{key: clientv3.GetPrefixRangeEnd(prefix)}
		a.AscendRange(lo, hi, func(kv cacheKV) bool {
			if now, ok := b.Get(kv); !ok {
				out = append(out, e.desiredVolumes(kv.key, kv.value, nil)...)
			} else if now.mod != kv.mod {
				out = append(out, e.desiredVolumes(kv.key, kv.value, now.value)...)
			}
			return true
		})
		b.AscendRange(lo, hi, func(kv cacheKV) bool {
			if _, ok := a.Get(kv); !ok {
				out = append(out, e.desiredVolumes(kv.key, nil, kv.value)...)
			}
			return true
		})
	}
	return out
}

// run watches from rev on; when the watch ends (etcd compacted past it,
// or it failed) it lists again and watches from there, until stopped.
func (c *etcdCache) run(ctx context.Context, rev int64) {
	defer close(c.done)
	wait := 100 * time.Millisecond
	for {
		c.e.requests.add(ReqWatch)
		err := c.watch(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		c.e.log("store cache: watch ended (%v); listing again", err)
		c.mu.Lock()
		c.ready = false
		c.mu.Unlock()
		for {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			listCtx, cancel := context.WithTimeout(ctx, c.e.cfg.Timeout)
			rev, err = c.list(listCtx)
			cancel()
			if err == nil {
				wait = 100 * time.Millisecond
				break
			}
			wait = min(2*wait, 2*time.Second)
		}
	}
}

// watch applies the changes after rev until the watch ends.
func (c *etcdCache) watch(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	prefix := string(c.e.k)
	ch := c.e.c.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for resp := range ch {
		if err := resp.Err(); err != nil {
			return err
		}
		if len(resp.Events) == 0 {
			continue
		}
		c.mu.Lock()
		var touched []cloud.VolumeID
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			var was []byte
			if old, ok := c.tree.Get(cacheKV{key: key}); ok {
				was = old.value
			}
			var now []byte
			if ev.Type == clientv3.EventTypeDelete {
				c.tree.Delete(cacheKV{key: key})
			} else {
				c.tree.ReplaceOrInsert(cacheKV{key: key, value: ev.Kv.Value, mod: ev.Kv.ModRevision})
				now = ev.Kv.Value
			}
			if c.onDesired != nil {
				touched = append(touched, c.e.desiredVolumes(key, was, now)...)
			}
			// Events come in revision order, a revision's all in one
			// response: every write up to this one is applied.
			c.applied = max(c.applied, ev.Kv.ModRevision)
		}
		c.changed.Broadcast()
		notify := c.onDesired
		c.mu.Unlock()
		if notify != nil && len(touched) > 0 {
			notify(touched)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("the watch channel closed")
}

// close stops the watch.
func (c *etcdCache) close() {
	c.mu.Lock()
	c.closed = true
	c.changed.Broadcast()
	c.mu.Unlock()
	c.cancel()
	<-c.done
}

// waitApplied waits until the cache holds every write up to rev, or ctx
// ends.
func (c *etcdCache) waitApplied(ctx context.Context, rev int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready && c.applied >= rev {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.changed.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	for !(c.ready && c.applied >= rev) {
		if c.closed {
			return errors.New("store: the store is closed")
		}
		if ctx.Err() != nil {
			return fmt.Errorf("store cache: revision %d not applied (at %d): %w", rev, c.applied, ctx.Err())
		}
		c.changed.Wait()
	}
	return nil
}

// lastWrite asks etcd for the revision of the store's latest write.
func (c *etcdCache) lastWrite(ctx context.Context) (int64, error) {
	resp, err := c.e.c.Get(ctx, c.e.k.last(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].ModRevision, nil
}

// fresh waits until the cache holds every write acknowledged before it
// was called (see the comment at the top).
func (c *etcdCache) fresh(ctx context.Context) error {
	rev, err := c.bar.wait(ctx)
	if err != nil {
		return err
	}
	return c.waitApplied(ctx, rev)
}

// ownFresh waits until the cache holds this process's own writes.
func (c *etcdCache) ownFresh(ctx context.Context) error {
	return c.waitApplied(ctx, c.own.get())
}

// ownRevision is the highest revision this process wrote.
type ownRevision struct {
	mu  sync.Mutex
	rev int64
}

func (o *ownRevision) get() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rev
}

func (o *ownRevision) wrote(rev int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rev = max(o.rev, rev)
}

// barrier coalesces the requests for meta/last: a waiter is answered by
// the first request that starts after it arrived.
type barrier struct {
	fetch   func(context.Context) (int64, error)
	timeout time.Duration // bounds each request

	mu       sync.Mutex
	inFlight bool
	next     *barrierRound // the round that starts once the one in flight ends
}

type barrierRound struct {
	done    chan struct{}
	rev     int64
	err     error
	waiters int // joined it (tests)
}

func (b *barrier) wait(ctx context.Context) (int64, error) {
	b.mu.Lock()
	r := b.next
	if r == nil {
		r = &barrierRound{done: make(chan struct{})}
		b.next = r
	}
	r.waiters++
	if !b.inFlight {
		b.startLocked()
	}
	b.mu.Unlock()
	select {
	case <-r.done:
		return r.rev, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// startLocked starts the next round; b.mu is held.
func (b *barrier) startLocked() {
	r := b.next
	b.next, b.inFlight = nil, true
	go func() {
		// The round serves every waiter that joined it, whichever gives
		// up first: its own bound.
		fctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		r.rev, r.err = b.fetch(fctx)
		cancel()
		close(r.done)
		b.mu.Lock()
		b.inFlight = false
		if b.next != nil {
			b.startLocked()
		}
		b.mu.Unlock()
	}()
}

// cacheReader reads the cache; mu is held for reading by its user.
type cacheReader struct{ c *etcdCache }

func (r cacheReader) get(_ context.Context, key string) (*mvccpb.KeyValue, error) {
	kv, ok := r.c.tree.Get(cacheKV{key: key})
	if !ok {
		return nil, nil
	}
	return kv.proto(), nil
}

// scan returns the keys from start to the end of prefix, at most limit
// (<= 0: all), in key order.
func (r cacheReader) scan(start, prefix string, limit int, keysOnly bool) []*mvccpb.KeyValue {
	end := clientv3.GetPrefixRangeEnd(prefix)
	var out []*mvccpb.KeyValue
	r.c.tree.AscendRange(cacheKV{key: start}, cacheKV{key: end}, func(kv cacheKV) bool {
		if keysOnly {
			kv.value = nil
		}
		out = append(out, kv.proto())
		return limit <= 0 || len(out) < limit
	})
	return out
}

// OnDesiredChange has fn told, from the cache's watch, the volumes whose
// desired state a write of anyone changed: a volume put or deleted, and
// the volumes of a workload put or deleted (before and after). A member
// tells the actors it owns from it (as Kubernetes' controllers act on
// their informers' events): a change committed by a member that could not
// tell them (cut off from its peers, not from etcd) reaches them all the
// same. fn runs on the watch's goroutine: it must not block. A store
// without a cache never calls it.
func (e *Etcd) OnDesiredChange(fn func([]cloud.VolumeID)) {
	if e.cache == nil {
		return
	}
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	e.cache.onDesired = fn
}

// desiredVolumes are the volumes whose desired state a change of key from
// was to now (nil: missing) touches.
func (e *Etcd) desiredVolumes(key string, was, now []byte) []cloud.VolumeID {
	switch {
	case strings.HasPrefix(key, e.k.volumes()):
		return []cloud.VolumeID{cloud.VolumeID(key[len(e.k.volumes()):])}
	case strings.HasPrefix(key, e.k.workloads()):
		var out []cloud.VolumeID
		for _, data := range [][]byte{was, now} {
			if data == nil {
				continue
			}
			var w workloadRecord
			if err := unmarshalRecord(data, &w); err != nil {
				e.log("store cache: decode %q: %v", key, err)
				continue
			}
			out = append(out, w.Volumes...)
		}
		return out
	}
	return nil
}
