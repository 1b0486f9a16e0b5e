package store

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/cloud"
)

// commitFenced commits then if cmps hold and, unless epoch is 0, owner's
// fence is still at epoch. It returns errConflict if a compare of cmps
// failed, an error wrapping ErrFenced if the fence moved.
func (e *Etcd) commitFenced(ctx context.Context, owner string, epoch uint64, cmps []clientv3.Cmp, then []clientv3.Op) error {
	var orElse []clientv3.Op
	if epoch != 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(e.k.fence(owner)), "=", int64(epoch)))
		orElse = append(orElse, clientv3.OpGet(e.k.fence(owner)))
	}
	resp, err := e.c.Txn(ctx).If(cmps...).Then(append(then, e.putLast())...).Else(orElse...).Commit()
	switch {
	case err != nil:
		return e.ioError("commit", e.cfg.Timeout, err)
	case resp.Succeeded:
		e.wrote(resp.Header.Revision)
		return nil
	case epoch != 0:
		var latest uint64
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			latest = uint64(kvs[0].ModRevision)
		}
		if latest != epoch {
			return fenced(owner, epoch, latest)
		}
	}
	return errConflict
}

// putLast is the put of meta/last that every write of the store makes in
// its transaction (see etcd_cache.go).
func (e *Etcd) putLast() clientv3.Op { return clientv3.OpPut(e.k.last(), "") }

// Claim implements Fences: the epoch is the etcd revision of a write of
// the owner's fence key, so it is greater than every claim before (etcd's
// revision only grows), and a fenced write compares the key's
// ModRevision with it in its own transaction.
func (e *Etcd) Claim(owner string) (uint64, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.c.Txn(ctx).Then(clientv3.OpPut(e.k.fence(owner), ""), e.putLast()).Commit()
	if err != nil {
		return 0, e.ioError("claim "+owner, e.cfg.Timeout, err)
	}
	e.wrote(resp.Header.Revision)
	return uint64(resp.Header.Revision), nil
}

// PutIntent implements Store: one transaction, guarded by the fence of
// VolumeOwner(in.Volume) unless in.Epoch is 0.
func (e *Etcd) PutIntent(in Intent) error {
	ctx, cancel := e.ctx()
	defer cancel()
	key := e.k.intent(in.Volume, in.Node)
	value, err := encodeRecord(key, intentRecord(in))
	if err == nil {
		err = e.commitFenced(ctx, VolumeOwner(in.Volume), in.Epoch, nil, []clientv3.Op{clientv3.OpPut(key, value)})
	}
	if err != nil {
		// errConflict cannot come back: without a fence, nothing is compared.
		return fmt.Errorf("store: put intent of volume %q on node %q: %w", in.Volume, in.Node, err)
	}
	return nil
}

// Intents implements Store.
func (e *Etcd) Intents(vol cloud.VolumeID) ([]Intent, error) {
	var out []Intent
	err := e.read("intents of "+string(vol), func(ctx context.Context, r kvReader) error {
		prefix := e.k.intent(vol, "")
		kvs, _, err := r.rangeOf(ctx, prefix, prefix, 0, false)
		if err == nil {
			out, err = decodeAll(kvs, func(r intentRecord) Intent { return Intent(r) })
		}
		return err
	})
	return sortIntents(out), err
}
