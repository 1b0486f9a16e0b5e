package store

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/cloud"
)

// commitFenced commits then if checks hold and, unless epoch is 0,
// owner's fence is still at epoch, in a transaction shared with other
// fenced writes if any wait (etcd_group.go). It returns errConflict if a
// check failed, an error wrapping ErrFenced if the fence moved.
func (e *Etcd) commitFenced(ctx context.Context, owner string, epoch uint64, checks []modCheck, then []clientv3.Op) error {
	fence := e.k.fence(owner)
	if epoch != 0 {
		checks = append(checks, modCheck{key: fence, mod: int64(epoch)})
	}
	res := e.group.commit(ctx, checks, then)
	switch {
	case res.err != nil:
		return res.err
	case res.ok:
		return nil
	case epoch != 0 && res.now[fence] != int64(epoch):
		return fenced(owner, epoch, uint64(res.now[fence]))
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
	res := e.group.commit(ctx, nil, []clientv3.Op{clientv3.OpPut(e.k.fence(owner), "")})
	if res.err != nil {
		return 0, fmt.Errorf("store: claim %s: %w", owner, res.err)
	}
	return uint64(res.rev), nil
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
	err := e.read("intents of "+string(vol), func(ctx context.Context, r kvReader) (err error) {
		out, err = e.intentsOf(ctx, r, vol)
		return err
	})
	return out, err
}

// intentsOf reads with r the intents of vol, sorted by node.
func (e *Etcd) intentsOf(ctx context.Context, r kvReader, vol cloud.VolumeID) ([]Intent, error) {
	prefix := e.k.intent(vol, "")
	kvs, _, err := r.rangeOf(ctx, prefix, prefix, 0, false)
	if err != nil {
		return nil, err
	}
	out, err := decodeAll(kvs, func(r intentRecord) Intent { return Intent(r) })
	return sortIntents(out), err
}
