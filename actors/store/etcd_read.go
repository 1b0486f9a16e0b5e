package store

import (
	"context"
	"errors"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// Reads are linearizable: each sees every write acknowledged before it
// began. A lookup through an index reads the index, then the records it
// lists at the index's revision: one snapshot, as Bolt's read transactions.

// read runs fn with a context bounded by the call's timeout and names
// what failed. fn is run again if etcd compacted the revision it pinned
// between its two reads.
func (e *Etcd) read(what string, fn func(ctx context.Context) error) error {
	ctx, cancel := e.ctx()
	defer cancel()
	var err error
	for range 3 {
		if err = fn(ctx); !errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
	}
	if err != nil {
		return e.ioError(what, e.cfg.Timeout, err)
	}
	return nil
}

// get reads key; nil if missing.
func (e *Etcd) get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	resp, err := e.c.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0], nil
}

// getMany reads keys at revision rev (0: the latest) in transactions of at
// most MaxTxnOps reads each, all at the revision of the first. It returns
// the values found by key, and the revision read.
func (e *Etcd) getMany(ctx context.Context, keys []string, rev int64) (map[string]*mvccpb.KeyValue, int64, error) {
	out := make(map[string]*mvccpb.KeyValue, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), e.cfg.MaxTxnOps)
		ops := make([]clientv3.Op, n)
		for i, k := range keys[:n] {
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(rev))
		}
		resp, err := e.c.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, 0, err
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
	return out, rev, nil
}

// rangeOf reads the keys from start (included) to the end of prefix, at
// most limit (<= 0: all), in key order.
func (e *Etcd) rangeOf(ctx context.Context, start, prefix string, limit int, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	opts = append(opts, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)))
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	return e.c.Get(ctx, start, opts...)
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
	err := e.read(what, func(ctx context.Context) error {
		kv, err := e.get(ctx, key)
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
	err := e.read(what, func(ctx context.Context) error {
		start := prefix
		if after != "" {
			start = prefix + after + "\x00" // the first name after after
		}
		resp, err := e.rangeOf(ctx, start, prefix, limit)
		if err != nil {
			return err
		}
		out, err = decodeAll(resp.Kvs, conv)
		return err
	})
	return out, err
}

// Revision implements Store.
func (e *Etcd) Revision() (rev uint64, err error) {
	err = e.read("revision", func(ctx context.Context) error {
		kv, err := e.get(ctx, e.k.revision())
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

// indexed reads the index entries of kind under a, then the records at the
// keys that key makes of their second halves, at the index's revision.
func (e *Etcd) indexed(ctx context.Context, kind, a string, key func(b string) string) ([]*mvccpb.KeyValue, error) {
	prefix := indexRange(kind, a)
	resp, err := e.rangeOf(ctx, prefix, prefix, 0, clientv3.WithKeysOnly())
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		keys[i] = key(indexSecond(kv, prefix))
	}
	got, _, err := e.getMany(ctx, keys, resp.Header.Revision)
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
	err := e.read(what, func(ctx context.Context) error {
		kvs, err := e.indexed(ctx, kind, a, e.k.workload)
		if err == nil {
			out, err = decodeAll(kvs, workloadRecord.workload)
		}
		return err
	})
	sortBySeq(out)
	return out, err
}

func (e *Etcd) NodeStatus(name cloud.NodeName) (nodestatus.Status, bool, error) {
	st, ok, err := getOne(e, "node status", e.k.status(name), statusRecord.status)
	if !ok {
		st = nodestatus.Status{}.Clone()
	}
	return st, ok, err
}

func (e *Etcd) NodeStatuses() ([]nodestatus.Status, error) {
	return pageOfKind(e, "node statuses", e.k.statuses(), "", 0, statusRecord.status)
}

// StatusesWithVolume implements Store: by node name.
func (e *Etcd) StatusesWithVolume(vol cloud.VolumeID) ([]nodestatus.Status, error) {
	var out []nodestatus.Status
	err := e.read("statuses with "+string(vol), func(ctx context.Context) error {
		kvs, err := e.indexed(ctx, e.k.volumeStatuses(), string(vol), func(node string) string { return e.k.status(cloud.NodeName(node)) })
		if err == nil && len(kvs) > 0 {
			out, err = decodeAll(kvs, statusRecord.status)
		}
		return err
	})
	return out, err
}

// RemoteReads: every read is a round trip to etcd (see store.RemoteReads).
func (e *Etcd) RemoteReads() bool { return true }
