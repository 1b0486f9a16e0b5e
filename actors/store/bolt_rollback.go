package store

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrRollback: one of the file's two meta pages is damaged, and it is (or
// may be) the newer one. bbolt would open the file at the older one,
// silently going back one transaction: the last commit, acknowledged to
// whoever made it, would be lost. OpenBolt refuses; OpenBoltWith and
// OpenOptions.AcceptRollback go on.
var ErrRollback = errors.New("store: opening would roll back the last commit")

// OpenOptions change what OpenBoltWith accepts.
type OpenOptions struct {
	// AcceptRollback opens a file whose newer meta page is damaged at the
	// older one, losing the last commit (ErrRollback). The first write
	// then overwrites the damaged page: the next open is clean.
	AcceptRollback bool
}

// rollbackError says what opening would roll back.
type rollbackError struct {
	path     string
	page     int    // the damaged meta page: 0 or 1
	kept     uint64 // the transaction bbolt would open at
	lost     uint64 // the transaction lost, 0 if its ID is unreadable
	modified time.Time
}

func (e *rollbackError) Error() string {
	lost := fmt.Sprintf("the transaction after %d (its meta page is unreadable)", e.kept)
	if e.lost != 0 {
		lost = fmt.Sprintf("transaction %d", e.lost)
	}
	return fmt.Sprintf("store: %s: meta page %d, the newer of the two, is damaged: opening would go back to transaction %d and lose %s, the last commit (the file was last written %s); a crash during that commit looks the same, and then nothing acknowledged is lost, but tether cannot tell: start tether up with --accept-rollback to go on from transaction %d, or %s",
		e.path, e.page, e.kept, lost, e.modified.UTC().Format(time.RFC3339), e.kept, recovery(e.path))
}

func (e *rollbackError) Is(target error) bool { return target == ErrRollback }

// checkRollback returns a rollbackError if exactly one meta page of the
// file at path (pages of pageSize bytes) is invalid and it is not plainly
// the older one: a damaged page whose transaction ID still reads as one
// less than the valid page's is the older, and losing it loses nothing.
// Both valid, or both invalid (openDB refuses that), is nil.
func checkRollback(path string, pageSize int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var metas [2]boltMeta
	var errs [2]error
	for i := range 2 {
		metas[i], errs[i] = readMeta(f, int64(i*pageSize))
	}
	if (errs[0] == nil) == (errs[1] == nil) {
		return nil
	}
	bad := 0
	if errs[1] != nil {
		bad = 1
	}
	kept := metas[1-bad].txid
	var raw [8]byte
	if _, err := f.ReadAt(raw[:], int64(bad*pageSize)+pageHeader+48); err != nil {
		return err
	}
	e := &rollbackError{path: path, page: bad, kept: kept}
	switch txid := native.Uint64(raw[:]); {
	case txid+1 == kept:
		return nil // the older page
	case txid == kept+1:
		e.lost = txid
	}
	if fi, err := f.Stat(); err == nil {
		e.modified = fi.ModTime()
	}
	return e
}
