package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/tether/tether/cloud/files/durable"
)

// Errors of OpenBolt, matched with errors.Is. Each one's message names the
// file; ErrCorrupt's and ErrEmpty's also say what to do.
var (
	// ErrCorrupt: the file is not a sound bbolt file holding tether's
	// buckets, or a transaction found a corrupt page later (then the Bolt
	// refuses every later transaction with the same error).
	ErrCorrupt = errors.New("store: database file is corrupt")
	// ErrEmpty: the file exists and has 0 bytes. bbolt would make it a new,
	// empty store; OpenBolt never does: an empty file is a lost store, not
	// a wish for no state.
	ErrEmpty = errors.New("store: database file is empty")
	// ErrMissing: there is no file (it also matches fs.ErrNotExist).
	// Only CreateBolt makes one.
	ErrMissing = errors.New("store: database file does not exist")
)

// recovery is what ErrCorrupt and ErrEmpty tell the user to do.
func recovery(path string) string {
	return "restore it from a backup, or start tether up with --rebuild-store, which moves it aside and rebuilds the desired state from what the cloud has attached and the nodes have mounted (see docs/operating.md: Recovery)"
}

type corruptError struct{ path, found string }

func (e *corruptError) Error() string {
	return fmt.Sprintf("store: %s is corrupt: %s; tether will not use it: %s", e.path, e.found, recovery(e.path))
}

func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }

type emptyError struct{ path string }

func (e emptyError) Error() string {
	return fmt.Sprintf("store: %s is empty (0 bytes), so it is not a tether store, and tether will not start over in its place: %s", e.path, recovery(e.path))
}

func (e emptyError) Is(target error) bool { return target == ErrEmpty }

type missingError struct {
	path string
	err  error // the *fs.PathError
}

func (e missingError) Error() string        { return "store: " + e.path + " does not exist" }
func (e missingError) Is(target error) bool { return target == ErrMissing }
func (e missingError) Unwrap() error        { return e.err }

// openDB opens the existing file at path with bbolt, read-only (shared
// lock) or read-write, waiting at most lockTimeout for the lock. It never
// creates or initializes a file: a missing one is ErrMissing, an empty one
// ErrEmpty. Only the meta pages are read unless writable (then the
// freelist too: verify first). A panic or fault inside bbolt becomes
// ErrCorrupt, and the file is closed.
func openDB(path string, readOnly bool) (db *bolt.DB, err error) {
	var f *os.File
	defer func() {
		if r := recover(); r != nil {
			if f != nil {
				_ = f.Close() // releases the lock; bbolt's mapping of the file leaks
			}
			db, err = nil, &corruptError{path: path, found: fmt.Sprintf("opening it failed: %v", r)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	open := func(name string, flag int, mode os.FileMode) (*os.File, error) {
		if f, err = os.OpenFile(name, flag&^os.O_CREATE, mode); err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
			_ = f.Close()
			return nil, errors.Join(err, emptyError{path: path})
		}
		return f, nil
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly, OpenFile: open})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, inUseError{path: path}
	case errors.Is(err, fs.ErrNotExist):
		return nil, missingError{path: path, err: err}
	case errors.Is(err, ErrEmpty):
		return nil, err
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, &corruptError{path: path, found: "neither meta page (the first two pages) is valid: " + err.Error()}
	case strings.Contains(err.Error(), "file size too small"):
		return nil, &corruptError{path: path, found: "the file is truncated: " + err.Error()}
	}
	return nil, fmt.Errorf("store: open %s: %w", path, err)
}

// verify checks the file at path before anything else reads it: its
// structure by a walk of plain reads (walker), then bbolt's own consistency
// check over every page (tx.Check), then tether's records (every value of a
// record bucket is JSON, the counters are 8 bytes). It holds bbolt's shared
// lock meanwhile, so no writer can change the file under it. Its time is
// the lock wait (at most lockTimeout) plus work linear in the file's size:
// each page is read once by the walk and once or twice by tx.Check, and the
// walk refuses a page referenced twice, so no cycle can make it loop.
//
// Unless acceptRollback, it also refuses a file whose newer meta page is
// damaged (checkRollback): bbolt would open it one commit back.
func verify(path string, acceptRollback bool) error {
	db, err := openDB(path, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if !acceptRollback {
		if err := checkRollback(path, db.Info().PageSize); err != nil {
			return err
		}
	}
	if err := readView(db, path, func(tx *bolt.Tx) error { return check(db, tx) }); err != nil {
		var ce *corruptError
		if errors.As(err, &ce) {
			return err
		}
		return &corruptError{path: path, found: err.Error()}
	}
	return nil
}

// readView runs fn in a read transaction of db, a panic or fault becoming
// ErrCorrupt.
func readView(db *bolt.DB, path string, fn func(*bolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &corruptError{path: path, found: fmt.Sprintf("reading it failed: %v", r)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return db.View(fn)
}

// check runs the three checks of verify in tx.
func check(db *bolt.DB, tx *bolt.Tx) error {
	f, err := os.Open(db.Path())
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	w := &walker{f: f, size: fi.Size(), pageSize: uint64(db.Info().PageSize)}
	m, err := currentMeta(w, uint64(tx.ID()))
	if err != nil {
		return err
	}
	if err := w.walk(m); err != nil {
		return err
	}
	var first []string
	n := 0
	for err := range tx.Check() { // drained whole: its goroutine ends only then
		if n++; n <= 3 {
			first = append(first, err.Error())
		}
	}
	if n > 0 {
		return fmt.Errorf("bbolt's check found %d problems, first: %s", n, strings.Join(first, "; "))
	}
	return checkRecords(tx)
}

// currentMeta returns the valid meta page of transaction txid: the one
// bbolt chose (the newer one, or the only valid one).
func currentMeta(w *walker, txid uint64) (boltMeta, error) {
	var why []string
	for _, off := range []int64{0, int64(w.pageSize)} {
		m, err := readMeta(w.f, off)
		if err == nil && m.txid == txid {
			return m, nil
		}
		if err != nil {
			why = append(why, err.Error())
		}
	}
	return boltMeta{}, fmt.Errorf("no valid meta page of transaction %d (%s)", txid, strings.Join(why, "; "))
}

// jsonBuckets hold one JSON record per key.
var jsonBuckets = [][]byte{bucketVolumes, bucketNodes, bucketWorkloads, bucketStatuses, bucketIntents}

// checkRecords checks what bbolt cannot (it keeps no checksums of values):
// the file holds tether's buckets, every record is JSON and the counters
// have 8 bytes.
func checkRecords(tx *bolt.Tx) error {
	found := 0
	for _, name := range allBuckets {
		if tx.Bucket(name) != nil {
			found++
		}
	}
	if found == 0 {
		return errors.New("it holds none of tether's buckets: it is some other bbolt file")
	}
	for _, name := range jsonBuckets {
		bk := tx.Bucket(name)
		if bk == nil {
			continue
		}
		err := bk.ForEach(func(k, v []byte) error {
			if !json.Valid(v) {
				return fmt.Errorf("record %s/%q is not JSON: its bytes are overwritten", name, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if tx.Bucket(bucketMeta) == nil {
		return nil
	}
	for _, key := range [][]byte{keyRevision, keySeq} {
		if _, err := counter(tx, key); err != nil {
			return err
		}
	}
	return nil
}

// CreateBolt creates a new store at path (file mode 0600; the parent
// directory must exist) and opens it. It never touches an existing file: if
// anything is at path, even an empty file, it fails with an error matching
// fs.ErrExist. The store appears at path whole or not at all: it is built
// in a temporary file beside path and linked into place (durable.CreateFrom),
// so that a crash while creating leaves no empty or half-made file for
// OpenBolt to refuse.
func CreateBolt(path string) (*Bolt, error) {
	err := durable.CreateFrom(path, 0o600, func(f *os.File) error { return initBolt(f.Name()) })
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("store: %w", err) // "create PATH: ..."
	case err != nil:
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	return OpenBolt(path)
}

// initBolt makes the empty file at name a store with tether's buckets.
func initBolt(name string) error {
	db, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		return err
	}
	err = db.Update(createBuckets)
	return errors.Join(err, db.Close())
}

func createBuckets(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}
