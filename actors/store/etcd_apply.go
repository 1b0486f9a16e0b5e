package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/cloud"
)

// An Apply reads what its ops replace (and the counters), computes every
// key's final value, and commits them in one transaction guarded by the
// revision key's ModRevision. Every write of the desired state goes
// through Apply and rewrites the revision key, so an unchanged ModRevision
// means nothing the plan read has changed; otherwise it plans again.

// etcdPlan is one attempt of an Apply.
type etcdPlan struct {
	k        etcdKeys
	read     map[string]*mvccpb.KeyValue
	revMod   int64  // ModRevision of the revision key (0: none yet)
	rev, seq uint64 // the counters read, seq bumped by created workloads
	seqRead  uint64
	writes   map[string]etcdWrite // each key's final state
}

type etcdWrite struct {
	value string
	del   bool
}

// Apply implements Store in one transaction.
func (e *Etcd) Apply(ops []Op) error {
	if err := checkOps(ops); err != nil {
		return err
	}
	if err := e.fitsAtLeast(ops); err != nil {
		return err
	}
	fail := e.injected(&e.failApply)
	ctx, cancel := context.WithTimeout(context.Background(), e.applyTimeout(len(ops)))
	defer cancel()
	attempt := 0
	err := retry(ctx, func() error {
		attempt++
		p, err := e.plan(ctx, ops, attempt > 1)
		if err != nil {
			return err
		}
		then, err := p.txnOps(e.cfg, len(ops))
		if err != nil {
			return err
		}
		if fail {
			return ErrInjected
		}
		resp, err := e.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(e.k.revision()), "=", p.revMod)).Then(append(then, e.putLast())...).Commit()
		if err != nil {
			return e.ioError("commit", e.cfg.Timeout, err)
		}
		if !resp.Succeeded {
			return errConflict
		}
		e.wrote(resp.Header.Revision)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: apply %d ops: %w", len(ops), err)
	}
	return nil
}

// perOp is what each op of a batch adds to Apply's time bound: etcd
// takes about 50 µs per op of a big transaction on a laptop, so a batch
// of 100,000 ops gets EtcdConfig.Timeout plus 10 s.
const perOp = 100 * time.Microsecond

// applyTimeout bounds an Apply of n ops.
func (e *Etcd) applyTimeout(n int) time.Duration { return e.cfg.Timeout + time.Duration(n)*perOp }

// recordKeys are the records ops read or write, without repeats.
func (e *Etcd) recordKeys(ops []Op) []string {
	seen := map[string]bool{}
	var keys []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, op := range ops {
		switch {
		case op.PutVolume != nil:
			add(e.k.volume(op.PutVolume.ID))
		case op.DeleteVolume != "":
			add(e.k.volume(op.DeleteVolume))
		case op.PutNode != nil:
			add(e.k.node(op.PutNode.Name))
		case op.DeleteNode != "":
			add(e.k.node(op.DeleteNode))
		case op.PutWorkload != nil:
			add(e.k.workload(op.PutWorkload.UID))
		case op.DeleteWorkload != "":
			add(e.k.workload(op.DeleteWorkload))
		}
	}
	return keys
}

// fitsAtLeast refuses, before reading anything, a batch that cannot fit:
// each record it touches is one write, the revision and meta/last two more.
func (e *Etcd) fitsAtLeast(ops []Op) error {
	return tooBig(e.cfg, len(ops), len(e.recordKeys(ops))+2, 0, "at least ")
}

// tooBig is ErrTooBig's error if a transaction of (atLeast) n operations
// and about size bytes does not fit etcd's limits.
func tooBig(cfg EtcdConfig, batch, n, size int, atLeast string) error {
	switch {
	case n > cfg.MaxTxnOps:
		return fmt.Errorf("%w: a batch of %d ops needs %s%d etcd operations in one transaction, more than etcd's limit of %d (--max-txn-ops, EtcdConfig.MaxTxnOps): split it",
			ErrTooBig, batch, atLeast, n, cfg.MaxTxnOps)
	case size > cfg.MaxRequestBytes:
		return fmt.Errorf("%w: a batch of %d ops makes a transaction of about %d bytes, more than etcd's limit of %d (--max-request-bytes, EtcdConfig.MaxRequestBytes): split it",
			ErrTooBig, batch, size, cfg.MaxRequestBytes)
	}
	return nil
}

// plan reads what ops replace and computes the final state of every key
// they touch.
func (e *Etcd) plan(ctx context.Context, ops []Op, fresh bool) (*etcdPlan, error) {
	keys := append(e.recordKeys(ops), e.k.revision(), e.k.seq())
	var read map[string]*mvccpb.KeyValue
	err := e.writerReads(ctx, fresh, func(r kvReader) (err error) {
		read, err = r.getMany(ctx, keys, 0)
		return err
	})
	if errors.Is(err, rpctypes.ErrCompacted) { // between two chunks of a big batch's reads
		return nil, errConflict
	}
	if err != nil {
		return nil, e.ioError("read", e.cfg.Timeout, err)
	}
	p := &etcdPlan{k: e.k, read: read, writes: map[string]etcdWrite{}}
	if kv := read[e.k.revision()]; kv != nil {
		p.revMod = kv.ModRevision
	}
	if p.rev, err = decodeCounter(read[e.k.revision()]); err != nil {
		return nil, err
	}
	if p.seq, err = decodeCounter(read[e.k.seq()]); err != nil {
		return nil, err
	}
	p.seqRead = p.seq
	for _, op := range ops {
		if err := p.apply(op); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// get returns key's value as the ops so far left it.
func (p *etcdPlan) get(key string) (*mvccpb.KeyValue, bool) {
	if w, ok := p.writes[key]; ok {
		if w.del {
			return nil, false
		}
		return &mvccpb.KeyValue{Key: []byte(key), Value: []byte(w.value)}, true
	}
	kv := p.read[key]
	return kv, kv != nil
}

// old decodes the record at key as the ops so far left it.
func old[R any](p *etcdPlan, key string) (R, bool, error) {
	kv, ok := p.get(key)
	if !ok {
		var zero R
		return zero, false, nil
	}
	rec, err := decodeRecord[R](kv)
	return rec, err == nil, err
}

func (p *etcdPlan) put(key string, rec any) error {
	v, err := encodeRecord(key, rec)
	p.writes[key] = etcdWrite{value: v}
	return err
}

func (p *etcdPlan) del(key string) { p.writes[key] = etcdWrite{del: true} }

// apply performs one op that passed Op.check on the plan.
func (p *etcdPlan) apply(op Op) error {
	switch {
	case op.PutVolume != nil:
		v := *op.PutVolume
		was, ok, err := old[volumeRecord](p, p.k.volume(v.ID))
		if err != nil {
			return err
		}
		v.ObjectUID = keepUID(was.ObjectUID, ok)
		return p.put(p.k.volume(v.ID), toVolumeRecord(v))
	case op.DeleteVolume != "":
		p.del(p.k.volume(op.DeleteVolume))
	case op.PutNode != nil:
		n := *op.PutNode
		was, ok, err := old[nodeRecord](p, p.k.node(n.Name))
		if err != nil {
			return err
		}
		n.ObjectUID = keepUID(was.ObjectUID, ok)
		return p.put(p.k.node(n.Name), nodeRecord(n))
	case op.DeleteNode != "":
		p.del(p.k.node(op.DeleteNode))
	case op.PutWorkload != nil:
		return p.putWorkload(*op.PutWorkload)
	case op.DeleteWorkload != "":
		was, ok, err := old[workloadRecord](p, p.k.workload(op.DeleteWorkload))
		if err != nil {
			return err
		}
		if ok {
			p.index(was.workload(), false)
		}
		p.del(p.k.workload(op.DeleteWorkload))
	}
	return nil
}

// putWorkload stores w, keeping the Seq and ObjectUID of the workload it
// replaces.
func (p *etcdPlan) putWorkload(w Workload) error {
	was, ok, err := old[workloadRecord](p, p.k.workload(w.UID))
	if err != nil {
		return err
	}
	if ok {
		w.Seq = was.Seq
		p.index(was.workload(), false)
	} else {
		p.seq++
		w.Seq = p.seq
	}
	w.ObjectUID = keepUID(was.ObjectUID, ok)
	p.index(w, true)
	return p.put(p.k.workload(w.UID), toWorkloadRecord(w))
}

// index adds (or, with add false, removes) w's index entries.
func (p *etcdPlan) index(w Workload, add bool) {
	set := func(key string) {
		if add {
			p.writes[key] = etcdWrite{}
		} else {
			p.del(key)
		}
	}
	set(indexEntry(p.k.nodeWorkloads(), string(w.Node), w.UID))
	for _, v := range w.Volumes {
		set(indexEntry(p.k.volumeWorkloads(), string(v), w.UID))
	}
}

// txnOps are the plan's writes, in key order, and the counters', after
// checking that they fit.
func (p *etcdPlan) txnOps(cfg EtcdConfig, batch int) ([]clientv3.Op, error) {
	p.writes[p.k.revision()] = etcdWrite{value: encodeCounter(p.rev + 1)}
	if p.seq != p.seqRead {
		p.writes[p.k.seq()] = etcdWrite{value: encodeCounter(p.seq)}
	}
	size := 0
	for k, w := range p.writes {
		size += len(k) + len(w.value) + 16 // a request op's framing
	}
	if err := tooBig(cfg, batch, len(p.writes)+1, size, ""); err != nil { // and meta/last's put
		return nil, err
	}
	ops := make([]clientv3.Op, 0, len(p.writes))
	for _, k := range slices.Sorted(maps.Keys(p.writes)) {
		if w := p.writes[k]; w.del {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, w.value))
		}
	}
	return ops, nil
}

// PutVolume and the other single-op writes are each one Apply.

func (e *Etcd) PutVolume(v VolumeSpec) error         { return e.Apply([]Op{{PutVolume: &v}}) }
func (e *Etcd) DeleteVolume(id cloud.VolumeID) error { return e.Apply([]Op{{DeleteVolume: id}}) }
func (e *Etcd) PutNode(n NodeSpec) error             { return e.Apply([]Op{{PutNode: &n}}) }
func (e *Etcd) DeleteNode(name cloud.NodeName) error { return e.Apply([]Op{{DeleteNode: name}}) }
func (e *Etcd) PutWorkload(w Workload) error         { return e.Apply([]Op{{PutWorkload: &w}}) }
func (e *Etcd) DeleteWorkload(uid string) error      { return e.Apply([]Op{{DeleteWorkload: uid}}) }
