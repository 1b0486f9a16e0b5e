package store

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Request kinds a store counts (RequestCounts): etcd's RPCs as the Etcd
// store sends them (a transaction that writes nothing is a txn_read), and
// Bolt's transactions.
const (
	ReqRange    = "range"     // etcd: a Get
	ReqTxnRead  = "txn_read"  // etcd: a transaction of reads only
	ReqTxnWrite = "txn_write" // etcd: a transaction that writes
	ReqPut      = "put"       // etcd: a plain Put
	ReqDelete   = "delete"    // etcd: a plain Delete
	ReqWatch    = "watch"     // etcd: a watch opened
	ReqView     = "view"      // bbolt: a read transaction
	ReqUpdate   = "update"    // bbolt: a write transaction (a Batch is one)
)

// requestCounter counts requests by kind; safe for concurrent use.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]*atomic.Uint64
}

func (c *requestCounter) counter(op string) *atomic.Uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]*atomic.Uint64{}
	}
	n := c.n[op]
	if n == nil {
		n = new(atomic.Uint64)
		c.n[op] = n
	}
	return n
}

func (c *requestCounter) add(op string) { c.counter(op).Add(1) }

// snapshot is every count so far.
func (c *requestCounter) snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]uint64, len(c.n))
	for op, n := range c.n {
		out[op] = n.Load()
	}
	return out
}

// RequestCounts returns how many requests s sent to its backend since it
// was opened, by kind (ReqRange, ...); nil for a store that counts none
// (Memory). tether_store_requests_total{op} exports them.
func RequestCounts(s Store) map[string]uint64 {
	if r, ok := s.(interface{ Requests() map[string]uint64 }); ok {
		return maps.Clone(r.Requests())
	}
	return nil
}

// countingKV counts every request sent through an etcd client's KV.
type countingKV struct {
	clientv3.KV
	n *requestCounter
}

func (k countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.n.add(ReqRange)
	return k.KV.Get(ctx, key, opts...)
}

func (k countingKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	k.n.add(ReqPut)
	return k.KV.Put(ctx, key, val, opts...)
}

func (k countingKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	k.n.add(ReqDelete)
	return k.KV.Delete(ctx, key, opts...)
}

func (k countingKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	switch {
	case op.IsGet():
		k.n.add(ReqRange)
	case op.IsPut():
		k.n.add(ReqPut)
	case op.IsDelete():
		k.n.add(ReqDelete)
	case op.IsTxn():
		k.n.add(ReqTxnWrite)
	}
	return k.KV.Do(ctx, op)
}

func (k countingKV) Txn(ctx context.Context) clientv3.Txn {
	return &countingTxn{Txn: k.KV.Txn(ctx), n: k.n}
}

// countingTxn counts its Commit as a txn_write if any branch writes.
type countingTxn struct {
	clientv3.Txn
	n      *requestCounter
	writes bool
}

func (t *countingTxn) note(ops []clientv3.Op) {
	for _, op := range ops {
		if !op.IsGet() {
			t.writes = true
		}
	}
}

func (t *countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *countingTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.writes {
		t.n.add(ReqTxnWrite)
	} else {
		t.n.add(ReqTxnRead)
	}
	return t.Txn.Commit()
}
