//go:build !unix

package process

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// tryLock: no flock here, and tether never runs unlocked.
func tryLock(*os.File) error {
	return errors.New("data directory locking is not supported on this platform")
}
