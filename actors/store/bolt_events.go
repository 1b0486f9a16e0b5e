package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/events"
)

// Bolt's event log, in two buckets of the store's file:
//
//	events        <stamp>                        the event's JSON (eventRecord)
//	event-names   <kind>\x00<name>\x00<stamp>    empty: the events of a name
//
// A stamp is 8 bytes big-endian: the write's time in nanoseconds, made
// strictly greater than the last stamp of the bucket, so the key order is
// both the append order and the time order. The TTL is a sweep of the
// oldest keys (SweepEvents, called every minute by the events.Writer);
// the bound per name a prune of a name's oldest keys in the transaction
// that appends to it. The buckets are created by the first append: a file
// that never held an event has none, and the store's own checks never
// look at them.
var (
	bucketEvents     = []byte("events")
	bucketEventNames = []byte("event-names")
)

// BoltEvents is the event log in a Bolt store's file.
type BoltEvents struct {
	b      *Bolt
	opts   EventOptions
	notify notifier
}

var _ events.Log = (*BoltEvents)(nil)
var _ events.Sweeper = (*BoltEvents)(nil)

// Events returns the event log in b's file; opts must be valid.
func (b *Bolt) Events(opts EventOptions) (*BoltEvents, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &BoltEvents{b: b, opts: opts.withDefaults()}, nil
}

func eventNameKey(k events.Kind, name string) []byte {
	key := make([]byte, 0, len(k)+len(name)+2+8)
	key = append(append(key, k...), 0)
	return append(append(key, name...), 0)
}

// AppendEvents implements events.Log: one write transaction.
func (l *BoltEvents) AppendEvents(_ context.Context, evs []events.Event) error {
	vals := make([][]byte, len(evs))
	for i, e := range evs {
		if err := checkEvent(e); err != nil {
			return err
		}
		v, err := encodeEvent(e)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	now := uint64(l.opts.Now().UnixNano())
	err := l.b.update(func(tx *bolt.Tx) error {
		evb, err := tx.CreateBucketIfNotExists(bucketEvents)
		if err != nil {
			return err
		}
		names, err := tx.CreateBucketIfNotExists(bucketEventNames)
		if err != nil {
			return err
		}
		var last uint64
		if k, _ := evb.Cursor().Last(); len(k) == 8 {
			last = binary.BigEndian.Uint64(k)
		}
		touched := map[string]bool{}
		for i, e := range evs {
			last = max(last+1, now)
			stamp := binary.BigEndian.AppendUint64(nil, last)
			if err := evb.Put(stamp, vals[i]); err != nil {
				return err
			}
			prefix := eventNameKey(e.Object.Kind, e.Object.Name)
			if err := names.Put(append(prefix, stamp...), nil); err != nil {
				return err
			}
			touched[string(prefix)] = true
		}
		for prefix := range touched {
			if err := l.prune(evb, names, []byte(prefix)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: append %d events: %w", len(evs), err)
	}
	l.notify.notify()
	return nil
}

// prune deletes the oldest events of the name whose event-names prefix is
// prefix beyond PerObject.
func (l *BoltEvents) prune(evb, names *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := names.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys[:max(0, len(keys)-l.opts.PerObject)] {
		if err := evb.Delete(k[len(prefix):]); err != nil {
			return err
		}
		if err := names.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// SweepEvents implements events.Sweeper: it deletes the events written
// more than TTL ago, in one transaction.
func (l *BoltEvents) SweepEvents(context.Context) (removed int, err error) {
	cutoff := l.opts.Now().Add(-l.opts.TTL).UnixNano()
	if cutoff < 0 {
		return 0, nil
	}
	err = l.b.update(func(tx *bolt.Tx) error {
		evb, names := tx.Bucket(bucketEvents), tx.Bucket(bucketEventNames)
		if evb == nil || names == nil {
			return nil
		}
		var stamps, nameKeys [][]byte
		c := evb.Cursor()
		for k, v := c.First(); k != nil && binary.BigEndian.Uint64(k) <= uint64(cutoff); k, v = c.Next() {
			e, err := decodeEvent(v)
			if err != nil {
				return err
			}
			stamps = append(stamps, bytes.Clone(k))
			nameKeys = append(nameKeys, append(eventNameKey(e.Object.Kind, e.Object.Name), k...))
		}
		for i := range stamps {
			if err := evb.Delete(stamps[i]); err != nil {
				return err
			}
			if err := names.Delete(nameKeys[i]); err != nil {
				return err
			}
		}
		removed = len(stamps)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep events: %w", err)
	}
	return removed, nil
}

// ListEvents implements events.Log; the cursor is the last stamp.
func (l *BoltEvents) ListEvents(_ context.Context, q events.Query) ([]events.Event, uint64, error) {
	if err := checkQuery(q); err != nil {
		return nil, 0, err
	}
	all, cursor, err := l.after(0, q)
	if err != nil {
		return nil, 0, err
	}
	return l.opts.readFilter(all, q), cursor, nil
}

// after reads the events stamped after cursor of q's kind and name (all
// of them: readFilter bounds them per name), and the last stamp.
func (l *BoltEvents) after(cursor uint64, q events.Query) (out []events.Event, last uint64, err error) {
	last = cursor
	err = l.b.view("list events", func(tx *bolt.Tx) error {
		evb, names := tx.Bucket(bucketEvents), tx.Bucket(bucketEventNames)
		if evb == nil || names == nil {
			return nil
		}
		if k, _ := evb.Cursor().Last(); len(k) == 8 {
			last = max(last, binary.BigEndian.Uint64(k))
		}
		from := binary.BigEndian.AppendUint64(nil, cursor+1)
		add := func(v []byte) error {
			e, err := decodeEvent(v)
			if err == nil && (q.Kind == "" || e.Object.Kind == q.Kind) {
				out = append(out, e)
			}
			return err
		}
		if q.Name == "" {
			c := evb.Cursor()
			for k, v := c.Seek(from); k != nil; k, v = c.Next() {
				if err := add(v); err != nil {
					return err
				}
			}
			return nil
		}
		prefix := eventNameKey(q.Kind, q.Name)
		c := names.Cursor()
		for k, _ := c.Seek(append(prefix, from...)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if v := evb.Get(k[len(prefix):]); v != nil {
				if err := add(v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, last, err
}

// WatchEvents implements events.Log: it reads what was appended after the
// cursor each time an append of this store wakes it (one process holds a
// Bolt file: every append is its own).
func (l *BoltEvents) WatchEvents(ctx context.Context, q events.Query, cursor uint64, fn func(events.Event)) error {
	if err := checkQuery(q); err != nil {
		return err
	}
	for {
		wake := l.notify.wait()
		next, last, err := l.after(cursor, q)
		if err != nil {
			return err
		}
		cursor = last
		for _, e := range next {
			if q.Matches(e) {
				fn(e)
			}
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}
