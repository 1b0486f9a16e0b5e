package store

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tether/tether/cloud"
)

// ErrFenced is returned by a fenced write whose epoch is no longer the
// latest claim of its owner; nothing was written.
var ErrFenced = errors.New("store: fenced: the owner was claimed by a newer epoch")

// Fences hands out ownership epochs. In distributed mode the cluster may
// briefly run two activations of one volume (or node) actor; each claims
// its owner when it starts and writes with the epoch it got, and the store
// refuses the writes of every activation but the last to claim (ErrFenced),
// checking the epoch atomically with the write. An activation that was
// fenced must stop: a newer one owns the object and has rebuilt from the
// store.
type Fences interface {
	// Claim returns a new epoch for owner, greater than every epoch
	// claimed for owner before by anyone sharing the store. owner is an
	// actor identity (VolumeOwner, NodeOwner).
	Claim(owner string) (uint64, error)
}

// VolumeOwner is the owner a volume actor claims; PutIntent checks an
// intent's Epoch against it.
func VolumeOwner(id cloud.VolumeID) string { return "volume/" + string(id) }

// NodeOwner is the owner a node actor claims; PutNodeStatusAt checks its
// epoch against it.
func NodeOwner(name cloud.NodeName) string { return "node/" + string(name) }

// fenced is the error of a write refused because epoch is not latest, the
// latest claim of owner (0: never claimed).
func fenced(owner string, epoch, latest uint64) error {
	return fmt.Errorf("%w: %s written with epoch %d, its latest claim is %d", ErrFenced, owner, epoch, latest)
}

// localFences are the fences of a store used by one process (Memory, and
// Bolt, whose file one process holds at a time): epochs live in memory
// only and start over with the process, whose writers all died with the
// previous one. Epochs come from one counter, so they increase across
// owners too.
//
// A claim waits for the fenced writes in progress (they hold mu for
// reading from their check until their write is done), so no write that
// passed its check can land after a newer claim returned: the new owner's
// rebuild, which starts after its claim, sees every write of the old one
// that will ever land.
type localFences struct {
	mu     sync.RWMutex
	last   uint64
	latest map[string]uint64
}

// Claim implements Fences.
func (f *localFences) Claim(owner string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.latest == nil {
		f.latest = map[string]uint64{}
	}
	f.last++
	f.latest[owner] = f.last
	return f.last, nil
}

// write runs fn if epoch is 0 (unfenced) or the latest claim of owner, and
// no claim can happen until fn returns; else it returns an error wrapping
// ErrFenced and fn does not run.
func (f *localFences) write(owner string, epoch uint64, fn func() error) error {
	if epoch == 0 {
		return fn()
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if latest := f.latest[owner]; latest != epoch {
		return fenced(owner, epoch, latest)
	}
	return fn()
}
