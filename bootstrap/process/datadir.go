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

// dirLock is a held data-directory lock.
type dirLock struct{ f *os.File }

// lockDataDir creates dir if needed and takes its lock without waiting.
// Nothing else in the directory may be read or written before it is held:
// a second process that started touching files (the sim cloud cleans its
// temporary files when it opens) would break the first one's writes.
func lockDataDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := ""
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
			holder = fmt.Sprintf(" (pid %d)", pid)
		}
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is held by another tether%s; stop it first, or use another --data-dir", ErrDataDirInUse, path, holder)
		}
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release drops the lock (the file stays, so that the next holder locks the
// same inode).
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
