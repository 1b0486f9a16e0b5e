package store

import (
	"context"
	"errors"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/cloud"
)

// Reads are linearizable: each sees every write acknowledged before it
// began. A lookup through an index reads the index, then the records it
// lists at the index's revision: one snapshot, as Bolt's read transactions.

// kvReader reads keys: from etcd (etcdReader: each call a request, a
// lookup through an index pinned to one revision) or from the cache
// (cacheReader: one snapshot for the whole read).
type kvReader interface {
	get(ctx context.Context, key string) (*mvccpb.KeyValue, error)
	// getMany reads keys at revision rev (0: the latest; the cache
	// ignores it); it returns the values found by key.
	getMany(ctx context.Context, keys []string, rev int64) (map[string]*mvccpb.KeyValue, error)
	// rangeOf reads the keys from start (included) to the end of prefix,
	// at most limit (<= 0: all), in key order, and the revision read.
	rangeOf(ctx context.Context, start, prefix string, limit int, keysOnly bool) ([]*mvccpb.KeyValue, int64, error)
	// keyAndRange reads key and every key of prefix, at one revision.
	keyAndRange(ctx context.Context, key, prefix string) (*mvccpb.KeyValue, []*mvccpb.KeyValue, error)
}

// read runs fn with a context bounded by the call's timeout and names
// what failed. fn is run again if etcd compacted the revision it pinned
// between its two reads. A cached store first waits until its cache holds
// every write acknowledged before (etcdCache.fresh), and runs fn on it.
func (e *Etcd) read(what string, fn func(ctx context.Context, r kvReader) error) error {
	ctx, cancel := e.ctx()
	defer cancel()
	var err error
	if c := e.cache; c != nil {
		if err = c.fresh(ctx); err == nil {
			c.mu.RLock()
			err = fn(ctx, cacheReader{c})
			c.mu.RUnlock()
		}
	} else {
		for range 3 {
			if err = fn(ctx, etcdReader{e}); !errors.Is(err, rpctypes.ErrCompacted) {
				break
			}
		}
	}
	if err != nil {
		return e.ioError(what, e.cfg.Timeout, err)
	}
	return nil
}

// writerReads runs fn on what a write reads before it commits: the cache,
// once it holds this process's own writes, if the store has one and
// fresh is false; else etcd. The write's compares catch a stale read;
// its retry reads fresh.
func (e *Etcd) writerReads(ctx context.Context, fresh bool, fn func(r kvReader) error) error {
	c := e.cache
	if c == nil || fresh {
		return fn(etcdReader{e})
	}
	if err := c.ownFresh(ctx); err != nil {
		return err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return fn(cacheReader{c})
}

// wrote notes a write of this process committed at rev (see ownFresh).
func (e *Etcd) wrote(rev int64) {
	if e.cache != nil {
		e.cache.own.wrote(rev)
	}
}

// etcdReader reads etcd.
type etcdReader struct{ e *Etcd }

func (r etcdReader) get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	resp, err := r.e.c.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0], nil
}

// getMany reads in transactions of at most MaxTxnOps reads each, all at
// the revision of the first.
func (r etcdReader) getMany(ctx context.Context, keys []string, rev int64) (map[string]*mvccpb.KeyValue, error) {
	out := make(map[string]*mvccpb.KeyValue, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), r.e.cfg.MaxTxnOps)
		ops := make([]clientv3.Op, n)
		for i, k := range keys[:n] {
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(rev))
		}
		resp, err := r.e.c.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().Kvs {
				out[string(kv.Key)] = kv
			}
		}
		keys = keys[n:]
	}
	return out, nil
}

func (r etcdReader) rangeOf(ctx context.Context, start, prefix string, limit int, keysOnly bool) ([]*mvccpb.KeyValue, int64, error) {
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	resp, err := r.e.c.Get(ctx, start, opts...)
	if err != nil {
		return nil, 0, err
	}
	return resp.Kvs, resp.Header.Revision, nil
}

// keyAndRange reads both in one transaction: one snapshot.
func (r etcdReader) keyAndRange(ctx context.Context, key, prefix string) (*mvccpb.KeyValue, []*mvccpb.KeyValue, error) {
	resp, err := r.e.c.Txn(ctx).Then(clientv3.OpGet(key), clientv3.OpGet(prefix, clientv3.WithPrefix())).Commit()
	if err != nil {
		return nil, nil, err
	}
	var kv *mvccpb.KeyValue
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		kv = kvs[0]
	}
	return kv, resp.Responses[1].GetResponseRange().Kvs, nil
}

func (r cacheReader) keyAndRange(ctx context.Context, key, prefix string) (*mvccpb.KeyValue, []*mvccpb.KeyValue, error) {
	kv, _ := r.get(ctx, key)
	return kv, r.scan(prefix, prefix, 0, false), nil
}

func (r cacheReader) getMany(ctx context.Context, keys []string, _ int64) (map[string]*mvccpb.KeyValue, error) {
	out := make(map[string]*mvccpb.KeyValue, len(keys))
	for _, k := range keys {
		if kv, _ := r.get(ctx, k); kv != nil {
			out[k] = kv
		}
	}
	return out, nil
}

func (r cacheReader) rangeOf(_ context.Context, start, prefix string, limit int, keysOnly bool) ([]*mvccpb.KeyValue, int64, error) {
	return r.scan(start, prefix, limit, keysOnly), 0, nil
}

// decodeAll decodes kvs in order.
func decodeAll[R, T any](kvs []*mvccpb.KeyValue, conv func(R) T) ([]T, error) {
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		rec, err := decodeRecord[R](kv)
		if err != nil {
			return nil, err
		}
		out = append(out, conv(rec))
	}
	return out, nil
}

// getOne reads and decodes the record at key.
func getOne[R, T any](e *Etcd, what, key string, conv func(R) T) (T, bool, error) {
	var out T
	var ok bool
	err := e.read(what, func(ctx context.Context, r kvReader) error {
		kv, err := r.get(ctx, key)
		if err != nil || kv == nil {
			return err
		}
		rec, err := decodeRecord[R](kv)
		out, ok = conv(rec), err == nil
		return err
	})
	return out, ok, err
}

// pageOfKind lists the records of a kind named after after, at most limit.
func pageOfKind[R, T any](e *Etcd, what, prefix, after string, limit int, conv func(R) T) ([]T, error) {
	var out []T
	err := e.read(what, func(ctx context.Context, r kvReader) error {
		start := prefix
		if after != "" {
			start = prefix + after + "\x00" // the first name after after
		}
		kvs, _, err := r.rangeOf(ctx, start, prefix, limit, false)
		if err != nil {
			return err
		}
		out, err = decodeAll(kvs, conv)
		return err
	})
	return out, err
}

// Revision implements Store.
func (e *Etcd) Revision() (rev uint64, err error) {
	err = e.read("revision", func(ctx context.Context, r kvReader) error {
		kv, err := r.get(ctx, e.k.revision())
		if err == nil {
			rev, err = decodeCounter(kv)
		}
		return err
	})
	return rev, err
}

func (e *Etcd) Volume(id cloud.VolumeID) (VolumeSpec, bool, error) {
	return getOne(e, "volume", e.k.volume(id), volumeRecord.spec)
}

// VolumesOf implements Store: one read of the cache (one freshness
// barrier), or transactions of MaxTxnOps gets at one revision.
func (e *Etcd) VolumesOf(ids []cloud.VolumeID) (map[cloud.VolumeID]VolumeSpec, error) {
	out := make(map[cloud.VolumeID]VolumeSpec, len(ids))
	err := e.read("volumes", func(ctx context.Context, r kvReader) error {
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = e.k.volume(id)
		}
		kvs, err := r.getMany(ctx, keys, 0)
		if err != nil {
			return err
		}
		for i, id := range ids {
			kv := kvs[keys[i]]
			if kv == nil {
				continue
			}
			rec, err := decodeRecord[volumeRecord](kv)
			if err != nil {
				return err
			}
			out[id] = rec.spec()
		}
		return nil
	})
	return out, err
}

func (e *Etcd) Volumes() ([]VolumeSpec, error) { return e.VolumesAfter("", 0) }

func (e *Etcd) VolumesAfter(after cloud.VolumeID, limit int) ([]VolumeSpec, error) {
	return pageOfKind(e, "volumes", e.k.volumes(), string(after), limit, volumeRecord.spec)
}

func (e *Etcd) Node(name cloud.NodeName) (NodeSpec, bool, error) {
	return getOne(e, "node", e.k.node(name), nodeRecord.spec)
}

func (e *Etcd) Nodes() ([]NodeSpec, error) { return e.NodesAfter("", 0) }

func (e *Etcd) NodesAfter(after cloud.NodeName, limit int) ([]NodeSpec, error) {
	return pageOfKind(e, "nodes", e.k.nodes(), string(after), limit, nodeRecord.spec)
}

func (e *Etcd) Workload(uid string) (Workload, bool, error) {
	return getOne(e, "workload", e.k.workload(uid), workloadRecord.workload)
}

func (e *Etcd) WorkloadsAfter(after string, limit int) ([]Workload, error) {
	return pageOfKind(e, "workloads", e.k.workloads(), after, limit, workloadRecord.workload)
}

// Workloads implements Store: by Seq.
func (e *Etcd) Workloads() ([]Workload, error) {
	out, err := e.WorkloadsAfter("", 0)
	sortBySeq(out)
	return out, err
}

func sortBySeq(ws []Workload) { sort.Slice(ws, func(i, j int) bool { return ws[i].Seq < ws[j].Seq }) }

func (e *Etcd) WorkloadsOn(node cloud.NodeName) ([]Workload, error) {
	return e.indexedWorkloads("workloads on "+string(node), e.k.nodeWorkloads(), string(node))
}

func (e *Etcd) DesiredNodes(vol cloud.VolumeID) ([]cloud.NodeName, error) {
	ws, err := e.indexedWorkloads("desired nodes of "+string(vol), e.k.volumeWorkloads(), string(vol))
	if err != nil {
		return nil, err
	}
	return DesiredNodesOf(ws, vol), nil
}

// indexedKVs reads with r the index entries of kind under a, then the records at the
// keys that key makes of their second halves, at the index's revision.
func indexedKVs(ctx context.Context, r kvReader, kind, a string, key func(b string) string) ([]*mvccpb.KeyValue, error) {
	prefix := indexRange(kind, a)
	idx, rev, err := r.rangeOf(ctx, prefix, prefix, 0, true)
	if err != nil || len(idx) == 0 {
		return nil, err
	}
	keys := make([]string, len(idx))
	for i, kv := range idx {
		keys[i] = key(indexSecond(kv, prefix))
	}
	got, err := r.getMany(ctx, keys, rev)
	if err != nil {
		return nil, err
	}
	out := make([]*mvccpb.KeyValue, 0, len(keys))
	for _, k := range keys { // in the index's order
		if kv := got[k]; kv != nil {
			out = append(out, kv)
		}
	}
	return out, nil
}

// indexedWorkloads returns the workloads the index kind lists under a, by
// Seq.
func (e *Etcd) indexedWorkloads(what, kind, a string) ([]Workload, error) {
	out := []Workload{}
	err := e.read(what, func(ctx context.Context, r kvReader) error {
		kvs, err := indexedKVs(ctx, r, kind, a, e.k.workload)
		if err == nil {
			out, err = decodeAll(kvs, workloadRecord.workload)
		}
		return err
	})
	sortBySeq(out)
	return out, err
}

// RemoteReads: every read is a round trip to etcd (see store.RemoteReads).
func (e *Etcd) RemoteReads() bool { return true }
