package store

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

func (e *Etcd) PutNodeStatus(s nodestatus.Status) error { return e.PutNodeStatusAt(s, 0) }

// PutNodeStatusAt implements Store: one transaction writes the status and
// the index entries that changed, guarded by the status's ModRevision as
// read (a concurrent write of the same status makes it read again) and,
// if epoch is not 0, by the fence of NodeOwner(s.Name).
func (e *Etcd) PutNodeStatusAt(s nodestatus.Status, epoch uint64) error {
	fail := e.injected(&e.failStatus)
	ctx, cancel := e.ctx()
	defer cancel()
	key := e.k.status(s.Name)
	rec := toStatusRecord(s)
	value, err := encodeRecord(key, rec)
	if err != nil {
		return err
	}
	attempt := 0
	err = retry(ctx, func() error {
		attempt++
		var kv *mvccpb.KeyValue
		err := e.writerReads(ctx, attempt > 1, func(r kvReader) (err error) {
			kv, err = r.get(ctx, key)
			return err
		})
		if err != nil {
			return e.ioError("read", e.cfg.Timeout, err)
		}
		var mod int64 // 0: compares equal to a missing key's
		var was *statusRecord
		if kv != nil {
			old, err := decodeRecord[statusRecord](kv)
			if err != nil {
				return err
			}
			mod, was = kv.ModRevision, &old
		}
		checks := []modCheck{{key: key, mod: mod}}
		then := append(e.statusIndexOps(was, rec), clientv3.OpPut(key, value))
		if len(then)+1 > e.cfg.MaxTxnOps { // and meta/last's put
			return fmt.Errorf("%w: the status lists %d volumes, and one transaction takes %d operations (EtcdConfig.MaxTxnOps)", ErrTooBig, len(then)-1, e.cfg.MaxTxnOps)
		}
		if fail {
			return ErrInjected
		}
		return e.commitFenced(ctx, NodeOwner(s.Name), epoch, checks, then)
	})
	if err != nil {
		return fmt.Errorf("store: put status of node %q: %w", s.Name, err)
	}
	return nil
}

// statusIndexOps replaces the index entries of was (if any) by those of
// r, touching only the keys that differ (see reindexStatus).
func (e *Etcd) statusIndexOps(was *statusRecord, r statusRecord) []clientv3.Op {
	kind := e.k.volumeStatuses()
	now := map[cloud.VolumeID]bool{}
	for _, v := range statusVolumes(r) {
		now[v] = true
	}
	var ops []clientv3.Op
	if was != nil {
		for _, v := range statusVolumes(*was) {
			if now[v] {
				delete(now, v)
				continue
			}
			ops = append(ops, clientv3.OpDelete(indexEntry(kind, string(v), string(was.Name))))
		}
	}
	for v := range now {
		ops = append(ops, clientv3.OpPut(indexEntry(kind, string(v), string(r.Name)), ""))
	}
	return ops
}
