package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// ErrInUse is matched (errors.Is) by OpenBolt's error when another process
// holds the database.
var ErrInUse = errors.New("store: database is in use by another process")

// lockTimeout bounds OpenBolt's wait for bbolt's file lock: without it a
// second process would hang instead of being told the store is taken.
const lockTimeout = time.Second

// Every key of a bucket is the record's ID (volume ID, node name, workload
// UID, node name), so a bucket's key order (bytewise) is the order Volumes,
// Nodes and NodeStatuses return. Values are JSON of the records below.
var (
	bucketVolumes   = []byte("volumes")
	bucketNodes     = []byte("nodes")
	bucketWorkloads = []byte("workloads")
	bucketStatuses  = []byte("statuses")
	bucketMeta      = []byte("meta") // keyRevision, keySeq: big-endian uint64
	// bucketIntents: key "<volume>\x00<node>" (see intentKey), so that a
	// volume's intents are one key range.
	bucketIntents = []byte("intents")
	allBuckets    = [][]byte{bucketVolumes, bucketNodes, bucketWorkloads, bucketStatuses, bucketMeta, bucketIntents}

	keyRevision = []byte("revision")
	keySeq      = []byte("seq") // the last Seq given to a workload
)

// Bolt is a durable Store in one bbolt file. Every write is one bbolt
// transaction, so a failed write changes nothing; reads are read
// transactions and see whole writes only. Secondary lookups (WorkloadsOn,
// DesiredNodes, StatusesWithVolume) scan their bucket.
type Bolt struct {
	db *bolt.DB

	mu         sync.Mutex // guards the injected failures
	failApply  int
	failStatus int

	broken atomic.Pointer[corruptError] // set once a transaction panicked (guard)

	txMu    sync.Mutex
	counted *bolt.Tx     // the write transaction last counted (commits)
	commits atomic.Int64 // write transactions committed
	views   atomic.Int64 // read transactions run

	// fences live in memory only (see localFences): one process holds
	// the file at a time, so fences only have to hold among its writers.
	fences localFences
}

// Syncs is how many times the store has synced its file to disk: two per
// committed write transaction (bbolt syncs the pages, then the meta page).
// Concurrent changes that share a transaction (Batch) share its syncs.
func (b *Bolt) Syncs() int64 { return 2 * b.commits.Load() }

// Requests counts the store's transactions since OpenBolt (see
// RequestCounts): read transactions (ReqView) and committed write
// transactions (ReqUpdate; the changes a Batch shares one).
func (b *Bolt) Requests() map[string]uint64 {
	return map[string]uint64{ReqView: uint64(b.views.Load()), ReqUpdate: uint64(b.commits.Load())}
}

// countCommit counts tx once when it commits. bbolt runs one write
// transaction at a time, and counted keeps the last one alive, so a new
// transaction never has its address.
func (b *Bolt) countCommit(tx *bolt.Tx) {
	if !tx.Writable() {
		b.views.Add(1)
		return
	}
	b.txMu.Lock()
	defer b.txMu.Unlock()
	if b.counted == tx {
		return
	}
	b.counted = tx
	tx.OnCommit(func() { b.commits.Add(1) })
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens the existing store at path, after verifying the whole
// file (verify: bbolt's structure, bbolt's consistency check of every page,
// tether's records) and before anything else reads it. It never creates or
// initializes a file (CreateBolt does): a missing file is an error matching
// ErrMissing (and fs.ErrNotExist), an empty one ErrEmpty, a damaged one
// ErrCorrupt; those of ErrEmpty and ErrCorrupt name the file and say what
// to do. It waits for bbolt's file lock at most lockTimeout (1 s), so a
// second process gets an error matching ErrInUse ("store: <path> is in use
// by another process") instead of hanging. Objects of a file written before
// ObjectUIDs existed get theirs here, before anyone reads. A file whose
// newer meta page is damaged is refused with ErrRollback, saying what
// opening it would lose (OpenBoltWith can accept that).
func OpenBolt(path string) (*Bolt, error) { return OpenBoltWith(path, OpenOptions{}) }

// OpenBoltWith is OpenBolt with options.
func OpenBoltWith(path string, o OpenOptions) (*Bolt, error) {
	if err := verify(path, o.AcceptRollback); err != nil {
		return nil, err
	}
	db, err := openDB(path, false)
	if err != nil {
		return nil, err
	}
	b := &Bolt{db: db}
	err = b.update(func(tx *bolt.Tx) error {
		if err := createBuckets(tx); err != nil {
			return err
		}
		if err := assignMissingUIDs(tx); err != nil {
			return err
		}
		return ensureIndexes(tx)
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: create buckets in %s: %w", path, err)
	}
	return b, nil
}

type inUseError struct{ path string }

func (e inUseError) Error() string        { return "store: " + e.path + " is in use by another process" }
func (e inUseError) Is(target error) bool { return target == ErrInUse }

// Close releases the file and its lock.
func (b *Bolt) Close() error {
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", b.db.Path(), err)
	}
	return nil
}

// FailApplies makes the next n Apply calls (single-op writes included) that
// pass validation fail with ErrInjected. The failure comes after the batch
// is written inside the transaction, so it exercises the rollback.
func (b *Bolt) FailApplies(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failApply = n
}

// FailNodeStatusWrites makes the next n PutNodeStatus calls fail with
// ErrInjected, changing nothing; like FailApplies, after the write.
func (b *Bolt) FailNodeStatusWrites(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failStatus = n
}

// injected consumes one injected failure from *n.
func (b *Bolt) injected(n *int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if *n == 0 {
		return false
	}
	*n--
	return true
}

// Apply implements Store in one transaction.
func (b *Bolt) Apply(ops []Op) error {
	if err := checkOps(ops); err != nil {
		return err
	}
	err := b.update(func(tx *bolt.Tx) error {
		ix := indexWrites{}
		for _, op := range ops {
			if err := applyBolt(tx, ix, op); err != nil {
				return err
			}
		}
		if err := ix.flush(tx); err != nil {
			return err
		}
		if _, err := bump(tx, keyRevision); err != nil {
			return err
		}
		if b.injected(&b.failApply) {
			return ErrInjected
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: apply %d ops: %w", len(ops), err)
	}
	return nil
}

// applyBolt performs one op that passed Op.check.
func applyBolt(tx *bolt.Tx, ix indexWrites, op Op) error {
	switch {
	case op.PutVolume != nil:
		v := *op.PutVolume
		old, ok, err := get[volumeRecord](tx, bucketVolumes, string(v.ID))
		if err != nil {
			return err
		}
		v.ObjectUID = keepUID(old.ObjectUID, ok)
		return put(tx, bucketVolumes, string(v.ID), toVolumeRecord(v))
	case op.DeleteVolume != "":
		return tx.Bucket(bucketVolumes).Delete([]byte(op.DeleteVolume))
	case op.PutNode != nil:
		n := *op.PutNode
		old, ok, err := get[nodeRecord](tx, bucketNodes, string(n.Name))
		if err != nil {
			return err
		}
		n.ObjectUID = keepUID(old.ObjectUID, ok)
		return put(tx, bucketNodes, string(n.Name), nodeRecord(n))
	case op.DeleteNode != "":
		return tx.Bucket(bucketNodes).Delete([]byte(op.DeleteNode))
	case op.PutWorkload != nil:
		return putWorkloadBolt(tx, ix, *op.PutWorkload)
	case op.DeleteWorkload != "":
		old, ok, err := get[workloadRecord](tx, bucketWorkloads, op.DeleteWorkload)
		if err != nil {
			return err
		}
		if ok {
			indexWorkload(ix, old.workload(), false)
		}
		return tx.Bucket(bucketWorkloads).Delete([]byte(op.DeleteWorkload))
	}
	return nil
}

// putWorkloadBolt stores w, keeping the Seq and ObjectUID of the workload
// it replaces.
func putWorkloadBolt(tx *bolt.Tx, ix indexWrites, w Workload) error {
	old, ok, err := get[workloadRecord](tx, bucketWorkloads, w.UID)
	if err != nil {
		return err
	}
	if ok {
		w.Seq = old.Seq
	} else if w.Seq, err = bump(tx, keySeq); err != nil {
		return err
	}
	w.ObjectUID = keepUID(old.ObjectUID, ok)
	if ok {
		indexWorkload(ix, old.workload(), false)
	}
	indexWorkload(ix, w, true)
	return put(tx, bucketWorkloads, w.UID, toWorkloadRecord(w))
}

// PutNodeStatus implements Store. Concurrent writes (every node actor
// writes its own status) share one transaction and one fsync (bbolt's
// Batch, group commit); each caller returns only once its status is
// durable.
func (b *Bolt) PutNodeStatus(s nodestatus.Status) error { return b.PutNodeStatusAt(s, 0) }

// PutNodeStatusAt implements Store: PutNodeStatus, fenced.
func (b *Bolt) PutNodeStatusAt(s nodestatus.Status, epoch uint64) error {
	err := b.fences.write(NodeOwner(s.Name), epoch, func() error { return b.putNodeStatus(s, b.db.Batch) })
	if errors.Is(err, ErrFenced) {
		return fmt.Errorf("store: put status of node %q: %w", s.Name, err)
	}
	return err
}

// Claim implements Fences. Epochs live in this process's memory only and
// start over when the file is opened again: one process holds the file at
// a time, so only its own writers need fencing from each other.
func (b *Bolt) Claim(owner string) (uint64, error) { return b.fences.Claim(owner) }

// putNodeStatus writes s in a transaction run by run (Batch; Update in the
// benchmark that measures what Batch saves). fn may run more than once
// (Batch retries a failed batch's functions one by one): it reads what it
// replaces inside, and the injected failure is decided once, before.
func (b *Bolt) putNodeStatus(s nodestatus.Status, run func(func(*bolt.Tx) error) error) error {
	fail := b.injected(&b.failStatus)
	err := b.guard(run, func(tx *bolt.Tx) error {
		old, ok, err := get[statusRecord](tx, bucketStatuses, string(s.Name))
		if err != nil {
			return err
		}
		var was *statusRecord
		if ok {
			was = &old
		}
		if err := reindexStatus(tx, was, toStatusRecord(s)); err != nil {
			return err
		}
		if err := put(tx, bucketStatuses, string(s.Name), toStatusRecord(s)); err != nil {
			return err
		}
		if fail {
			return ErrInjected
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put status of node %q: %w", s.Name, err)
	}
	return nil
}

func (b *Bolt) PutVolume(v VolumeSpec) error {
	return b.Apply([]Op{{PutVolume: &v}})
}

func (b *Bolt) DeleteVolume(id cloud.VolumeID) error {
	return b.Apply([]Op{{DeleteVolume: id}})
}

func (b *Bolt) PutNode(n NodeSpec) error {
	return b.Apply([]Op{{PutNode: &n}})
}

func (b *Bolt) DeleteNode(name cloud.NodeName) error {
	return b.Apply([]Op{{DeleteNode: name}})
}

func (b *Bolt) PutWorkload(w Workload) error {
	return b.Apply([]Op{{PutWorkload: &w}})
}

func (b *Bolt) DeleteWorkload(uid string) error {
	return b.Apply([]Op{{DeleteWorkload: uid}})
}

// bump increments the counter at key of the meta bucket and returns its
// new value.
func bump(tx *bolt.Tx, key []byte) (uint64, error) {
	n, err := counter(tx, key)
	if err != nil {
		return 0, err
	}
	n++
	return n, tx.Bucket(bucketMeta).Put(key, binary.BigEndian.AppendUint64(nil, n))
}

// counter reads a counter of the meta bucket; a missing one is 0.
func counter(tx *bolt.Tx, key []byte) (uint64, error) {
	v := tx.Bucket(bucketMeta).Get(key)
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("store: %s/%s holds %d bytes, want 8", bucketMeta, key, len(v))
}

func put(tx *bolt.Tx, bucket []byte, key string, rec any) error {
	data, err := marshalRecord(rec)
	if err != nil {
		return fmt.Errorf("store: encode %s/%s: %w", bucket, key, err)
	}
	return tx.Bucket(bucket).Put([]byte(key), data)
}

// get decodes the record at key; the bytes bbolt returns live only as long
// as the transaction, the decoded record longer.
func get[R any](tx *bolt.Tx, bucket []byte, key string) (R, bool, error) {
	var rec R
	data := tx.Bucket(bucket).Get([]byte(key))
	if data == nil {
		return rec, false, nil
	}
	if err := unmarshalRecord(data, &rec); err != nil {
		return rec, false, fmt.Errorf("store: decode %s/%s: %w", bucket, key, err)
	}
	return rec, true, nil
}

// scan decodes every record of bucket, in key order.
func scan[R any](tx *bolt.Tx, bucket []byte, fn func(R)) error {
	return tx.Bucket(bucket).ForEach(func(k, data []byte) error {
		rec, err := decode[R](bucket, k, data)
		if err != nil {
			return err
		}
		fn(rec)
		return nil
	})
}

func decode[R any](bucket, key, data []byte) (R, error) {
	var rec R
	if err := unmarshalRecord(data, &rec); err != nil {
		return rec, fmt.Errorf("store: decode %s/%s: %w", bucket, key, err)
	}
	return rec, nil
}
