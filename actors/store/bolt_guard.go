package store

import (
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// guard runs fn in a transaction started by run (the DB's View, Update or
// Batch) so that a corrupt page cannot end the process: bbolt panics on a
// page that is not what it expects, and reading past the mapped file is a
// fault, which SetPanicOnFault turns into a panic for the goroutine running
// fn. Either becomes an error wrapping ErrCorrupt. OpenBolt verified the
// file, so this is for damage done since (or a bug). After the first one
// the Bolt refuses every transaction with that error: pages it read can no
// longer be trusted, and a write would build on them.
//
// fn is guarded inside too, because Batch may run it on another goroutine.
// A panic while bbolt commits a Batch there is not covered.
func (b *Bolt) guard(run func(func(*bolt.Tx) error) error, fn func(*bolt.Tx) error) (err error) {
	if e := b.broken.Load(); e != nil {
		return e
	}
	defer func() {
		if r := recover(); r != nil {
			err = b.panicked(r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return run(func(tx *bolt.Tx) (err error) {
		if e := b.broken.Load(); e != nil {
			return e
		}
		defer func() {
			if r := recover(); r != nil {
				err = b.panicked(r)
			}
		}()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		b.countCommit(tx)
		return fn(tx)
	})
}

// panicked records the first recovered panic as the Bolt's corruption and
// returns the error every transaction now returns.
func (b *Bolt) panicked(r any) error {
	b.broken.CompareAndSwap(nil, &corruptError{path: b.db.Path(), found: fmt.Sprintf("reading it failed: %v", r)})
	return b.broken.Load()
}

func (b *Bolt) update(fn func(*bolt.Tx) error) error { return b.guard(b.db.Update, fn) }
