package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile, under the data directory, is held (flock) by the one tether
// process that owns the directory, for as long as it runs. It holds that
// process's PID, for the error message of the next one.
const LockFile = "tether.lock"

// ErrDataDirInUse is matched by the error of a start on a data directory
// that another process holds.
var ErrDataDirInUse = errors.New("data directory in use")

// dirLock is a held data-directory lock: a flock on the directory
// itself, which no one can delete or replace while it holds files (a lock
// on tether.lock alone is lost with the file: a second process would
// create a new one and lock that).
type dirLock struct{ d *os.File }

// lockDataDir creates dir if needed, refuses it if others may write in it,
// and takes its lock without waiting. Nothing else in the directory may be
// read or written before it is held: a second process that started
// touching files (the sim cloud cleans its temporary files when it opens)
// would break the first one's writes.
func lockDataDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if err := checkDataDirMode(dir); err != nil {
		return nil, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	if err := tryLock(d); err != nil {
		d.Close()
		holder := ""
		b, _ := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
			holder = fmt.Sprintf(" (pid %d)", pid)
		}
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is held by another tether%s; stop it first, or use another --data-dir", ErrDataDirInUse, path, holder)
		}
		return nil, fmt.Errorf("data directory lock %s: %w", dir, err)
	}
	// The lock is held: tether.lock only says by whom, for the message above.
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		d.Close()
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	return &dirLock{d: d}, nil
}

// checkDataDirMode refuses a data directory that group or others may write
// in: it holds the API's address and token, which clients trust, and the
// store; another user could replace them.
func checkDataDirMode(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("data directory %s is writable by group or others (mode %04o): it holds the API's address and token, which clients trust; fix it with: chmod go-w %s", dir, perm, dir)
	}
	return nil
}

// release drops the lock (tether.lock stays: it names the last holder).
func (l *dirLock) release() error {
	if l == nil || l.d == nil {
		return nil
	}
	err := l.d.Close()
	l.d = nil
	return err
}
