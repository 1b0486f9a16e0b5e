package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// A node status is kept in pieces, so that a write costs what changed,
// not what the node holds: the head (statuses/<node>: the statusRecord
// without its volume maps) and an entry per volume the maps name
// (status-vols/<node>\x00<volume>: volEntry). A write puts the head (its
// ModRevision guards the write: every writer of a node's entries reads
// and compares it) and the entries and index keys that changed. A head
// written whole, maps included (before this layout), still reads: its
// maps are merged with the entries, and the next write moves them out.

// volEntry is one volume's place in a node status: in VolumesAttached
// (with its device path), VolumesInUse and VolumesDetaching; the last two
// keep a false value apart from a missing one (0 missing, 1 false, 2
// true), as the maps do.
type volEntry struct {
	Attached  bool   `json:"a,omitempty"`
	Device    string `json:"d,omitempty"`
	InUse     uint8  `json:"u,omitempty"`
	Detaching uint8  `json:"x,omitempty"`
}

func tri(v, ok bool) uint8 {
	switch {
	case !ok:
		return 0
	case v:
		return 2
	}
	return 1
}

// volEntries splits r's volume maps into entries.
func volEntries(r statusRecord) map[cloud.VolumeID]volEntry {
	out := map[cloud.VolumeID]volEntry{}
	for v, d := range r.VolumesAttached {
		en := out[v]
		en.Attached, en.Device = true, d
		out[v] = en
	}
	for v, u := range r.VolumesInUse {
		en := out[v]
		en.InUse = tri(u, true)
		out[v] = en
	}
	for v, x := range r.VolumesDetaching {
		en := out[v]
		en.Detaching = tri(x, true)
		out[v] = en
	}
	return out
}

// add puts en back into r's maps.
func (en volEntry) add(r *statusRecord, v cloud.VolumeID) {
	if en.Attached {
		r.VolumesAttached[v] = en.Device
	}
	if en.InUse != 0 {
		r.VolumesInUse[v] = en.InUse == 2
	}
	if en.Detaching != 0 {
		r.VolumesDetaching[v] = en.Detaching == 2
	}
}

// statusParts is what the store holds of one node's status.
type statusParts struct {
	head    *mvccpb.KeyValue // nil: no status
	entries map[cloud.VolumeID]volEntry
}

// readStatus reads node's head and entries with r, at one revision.
func (e *Etcd) readStatus(ctx context.Context, r kvReader, node cloud.NodeName) (statusParts, error) {
	p := statusParts{entries: map[cloud.VolumeID]volEntry{}}
	prefix := e.k.statusVolumes(node)
	head, kvs, err := r.keyAndRange(ctx, e.k.status(node), prefix)
	if err != nil || head == nil {
		return p, err
	}
	p.head = head
	for _, kv := range kvs {
		var en volEntry
		if err := json.Unmarshal(kv.Value, &en); err != nil {
			return p, fmt.Errorf("store: decode %q: %w", kv.Key, err)
		}
		p.entries[cloud.VolumeID(kv.Key[len(prefix):])] = en
	}
	return p, nil
}

// record is the status the parts make.
func (p statusParts) record() (statusRecord, error) {
	rec, err := decodeRecord[statusRecord](p.head)
	if err != nil {
		return rec, err
	}
	s := nodestatus.Status(rec).Clone() // maps never nil
	rec = statusRecord(s)
	for v, en := range p.entries {
		en.add(&rec, v)
	}
	return rec, nil
}

// readStatuses reads the statuses of nodes with r, in their order,
// leaving out those without one.
func (e *Etcd) readStatuses(ctx context.Context, r kvReader, nodes []cloud.NodeName) ([]nodestatus.Status, error) {
	var out []nodestatus.Status
	for _, n := range nodes {
		p, err := e.readStatus(ctx, r, n)
		if err != nil {
			return nil, err
		}
		if p.head == nil {
			continue
		}
		rec, err := p.record()
		if err != nil {
			return nil, err
		}
		out = append(out, rec.status())
	}
	return out, nil
}

func (e *Etcd) NodeStatus(name cloud.NodeName) (nodestatus.Status, bool, error) {
	var sts []nodestatus.Status
	err := e.read("node status", func(ctx context.Context, r kvReader) (err error) {
		sts, err = e.readStatuses(ctx, r, []cloud.NodeName{name})
		return err
	})
	if len(sts) == 0 || err != nil {
		return nodestatus.Status{}.Clone(), false, err
	}
	return sts[0], true, nil
}

// NodeStatuses implements Store: by node name.
func (e *Etcd) NodeStatuses() ([]nodestatus.Status, error) {
	var out []nodestatus.Status
	err := e.read("node statuses", func(ctx context.Context, r kvReader) error {
		heads, _, err := r.rangeOf(ctx, e.k.statuses(), e.k.statuses(), 0, true)
		if err != nil {
			return err
		}
		nodes := make([]cloud.NodeName, len(heads))
		for i, kv := range heads {
			nodes[i] = cloud.NodeName(kv.Key[len(e.k.statuses()):])
		}
		out, err = e.readStatuses(ctx, r, nodes)
		return err
	})
	return out, err
}

// StatusesWithVolume implements Store: by node name.
func (e *Etcd) StatusesWithVolume(vol cloud.VolumeID) ([]nodestatus.Status, error) {
	var out []nodestatus.Status
	err := e.read("statuses with "+string(vol), func(ctx context.Context, r kvReader) (err error) {
		out, err = e.statusesWithVolume(ctx, r, vol)
		return err
	})
	return out, err
}

// statusesWithVolume reads with r the statuses that list vol.
func (e *Etcd) statusesWithVolume(ctx context.Context, r kvReader, vol cloud.VolumeID) ([]nodestatus.Status, error) {
	prefix := indexRange(e.k.volumeStatuses(), string(vol))
	idx, _, err := r.rangeOf(ctx, prefix, prefix, 0, true)
	if err != nil || len(idx) == 0 {
		return nil, err
	}
	nodes := make([]cloud.NodeName, len(idx))
	for i, kv := range idx {
		nodes[i] = cloud.NodeName(indexSecond(kv, prefix))
	}
	return e.readStatuses(ctx, r, nodes)
}

func (e *Etcd) PutNodeStatus(s nodestatus.Status) error { return e.PutNodeStatusAt(s, 0) }

// PutNodeStatusAt implements Store: one transaction writes the head and
// the entries and index keys that changed, guarded by the head's
// ModRevision as read (a concurrent write of the same status makes it
// read again) and, if epoch is not 0, by the fence of NodeOwner(s.Name).
func (e *Etcd) PutNodeStatusAt(s nodestatus.Status, epoch uint64) error {
	if strings.ContainsRune(string(s.Name), 0) {
		return fmt.Errorf("store: put status of node %q: the name holds a NUL", s.Name)
	}
	fail := e.injected(&e.failStatus)
	ctx, cancel := e.ctx()
	defer cancel()
	key := e.k.status(s.Name)
	rec := toStatusRecord(s)
	entries := volEntries(rec)
	head := rec
	head.VolumesAttached, head.VolumesInUse, head.VolumesDetaching = nil, nil, nil
	value, err := encodeRecord(key, head)
	if err != nil {
		return err
	}
	attempt := 0
	err = retry(ctx, func() error {
		attempt++
		var was statusParts
		err := e.writerReads(ctx, attempt > 1, func(r kvReader) (err error) {
			was, err = e.readStatus(ctx, r, s.Name)
			return err
		})
		if err != nil {
			return e.ioError("read", e.cfg.Timeout, err)
		}
		var mod int64 // 0: compares equal to a missing key's
		var old *statusRecord
		if was.head != nil {
			r, err := was.record()
			if err != nil {
				return err
			}
			mod, old = was.head.ModRevision, &r
		}
		then, err := e.statusEntryOps(s.Name, was.entries, entries)
		if err != nil {
			return err
		}
		then = append(then, e.statusIndexOps(old, rec)...)
		then = append(then, clientv3.OpPut(key, value))
		if len(then)+1 > e.cfg.MaxTxnOps { // and meta/last's put
			return fmt.Errorf("%w: the status changes %d keys, and one transaction takes %d operations (EtcdConfig.MaxTxnOps)", ErrTooBig, len(then), e.cfg.MaxTxnOps)
		}
		if fail {
			return ErrInjected
		}
		return e.commitFenced(ctx, NodeOwner(s.Name), epoch, []modCheck{{key: key, mod: mod}}, then)
	})
	if err != nil {
		return fmt.Errorf("store: put status of node %q: %w", s.Name, err)
	}
	return nil
}

// statusEntryOps turns the entries was into now, touching only those
// that differ, in volume order.
func (e *Etcd) statusEntryOps(node cloud.NodeName, was, now map[cloud.VolumeID]volEntry) ([]clientv3.Op, error) {
	var ops []clientv3.Op
	for _, v := range slices.Sorted(maps.Keys(was)) {
		if _, ok := now[v]; !ok {
			ops = append(ops, clientv3.OpDelete(e.k.statusVolume(node, v)))
		}
	}
	for _, v := range slices.Sorted(maps.Keys(now)) {
		en := now[v]
		if old, ok := was[v]; ok && old == en {
			continue
		}
		data, err := json.Marshal(en)
		if err != nil {
			return nil, fmt.Errorf("store: encode the status entry of %s on %s: %w", v, node, err)
		}
		ops = append(ops, clientv3.OpPut(e.k.statusVolume(node, v), string(data)))
	}
	return ops, nil
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
	for _, v := range slices.Sorted(maps.Keys(now)) {
		ops = append(ops, clientv3.OpPut(indexEntry(kind, string(v), string(r.Name)), ""))
	}
	return ops
}
