//go:build unix

package process

import (
	"os"
	"syscall"
)

var errWouldBlock error = syscall.EWOULDBLOCK

// tryLock takes an exclusive flock on f without waiting. The kernel drops
// it when the process dies, SIGKILL included.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
