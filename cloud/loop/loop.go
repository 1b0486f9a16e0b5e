package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/durable"
)

// Defaults applied by Open to zero (or negative) Config fields: the sim's.
const (
	DefaultBatchSize   = 50
	DefaultAttachLimit = 39
)

// ErrClosed is wrapped by every call on a closed Cloud.
var ErrClosed = errors.New("loop: cloud closed")

// ErrVolumeInUse is wrapped by DeleteVolume when the volume is attached.
var ErrVolumeInUse = errors.New("loop: volume in use")

// Config sets up a Cloud.
type Config struct {
	// Dir is the data directory: the state file, the lock and the
	// images. Created (mode 0700) if missing. Required.
	Dir string
	// BatchSize is how many instances one VolumesAreAttached or
	// InstanceVolumes call may cover; default DefaultBatchSize.
	BatchSize int
	// AttachLimit is the attach limit of new instances; default
	// DefaultAttachLimit. SetAttachLimit changes one instance's.
	AttachLimit int
	// Now is the clock against which a call's deadline is checked;
	// default time.Now.
	Now func() time.Time
}

// Cloud is a cloud.Provider whose volumes are image files and whose
// attachments are loop devices. Create it with Open.
type Cloud struct {
	dir       string // canonical; immutable, as the fields down to write
	images    string
	statePath string
	batch     int
	defLimit  int
	now       func() time.Time
	dev       devices
	write     func(path string, data []byte) error // writeState; a test seam

	// op serializes changes, each from its checks to its publication,
	// device calls and state writes included.
	op   sync.Mutex
	lock *os.File // the flock on Dir/lock; guarded by op; nil once closed

	closed atomic.Bool
	// cur is the published world: durable, never modified, replaced
	// under op. Readers load it without waiting for a change in progress.
	cur atomic.Pointer[world]
}

var _ cloud.Provider = (*Cloud)(nil)

// Open opens the cloud whose data directory is cfg.Dir (a new, empty one
// if the directory holds no state yet) and reconciles its recorded
// attachments with the host's loop devices (see
// docs/storage.md#the-loop-cloud-inside). It
// fails with ErrNotRoot unless the process runs as root, with
// ErrUnavailable when loop devices cannot be used here (not Linux, no
// /dev/loop-control), with ErrInUse while another Cloud has the directory
// open, and when the state file is corrupt or an attachment cannot be
// restored. Every error says why in words a command line can print.
func Open(cfg Config) (*Cloud, error) {
	if cfg.Dir == "" {
		return nil, errors.New("loop: no data directory (Config.Dir)")
	}
	if err := checkHost(); err != nil {
		return nil, err
	}
	return open(cfg, kernel{})
}

// open is Open on the loop driver dev.
func open(cfg Config, dev devices) (*Cloud, error) {
	dir, err := prepareDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("loop: data directory %s: %w", cfg.Dir, err)
	}
	lock, err := lockDir(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("loop: data directory %s: %w", dir, err)
	}
	c := newCloud(cfg, dir, dev)
	c.lock = lock
	if err := c.start(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	return c, nil
}

func newCloud(cfg Config, dir string, dev devices) *Cloud {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.AttachLimit <= 0 {
		cfg.AttachLimit = DefaultAttachLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cloud{
		dir:       dir,
		images:    filepath.Join(dir, imagesName),
		statePath: filepath.Join(dir, stateName),
		batch:     cfg.BatchSize,
		defLimit:  cfg.AttachLimit,
		now:       cfg.Now,
		dev:       dev,
		write:     writeState,
	}
}

// start loads the state and reconciles it, before c is shared.
func (c *Cloud) start() error {
	durable.RemoveStaleTemps(c.statePath)
	w, err := c.loadWorld()
	if err != nil {
		return err
	}
	c.cur.Store(w)
	return c.reconcile()
}

// Close releases the data directory, so that another Cloud may open it,
// after the changes in progress are done. It detaches nothing: the loop
// devices outlive the process, as a cloud's attachments outlive its
// clients (ReleaseAll releases them). Every later call fails with
// ErrClosed. Closing twice does nothing.
func (c *Cloud) Close() error {
	c.op.Lock()
	defer c.op.Unlock()
	if c.lock == nil {
		return nil
	}
	c.closed.Store(true)
	err := c.lock.Close()
	c.lock = nil
	return err
}

// Dir returns the data directory, absolute, with symlinks resolved.
func (c *Cloud) Dir() string { return c.dir }

// BatchSize implements cloud.Provider.
func (c *Cloud) BatchSize() int { return c.batch }

// ImagePath returns the path of volume id's image (whether or not the
// volume exists), for an operator who wants to read it or put a file
// system on a read-only volume before it is attached.
func (c *Cloud) ImagePath(id cloud.VolumeID) (string, error) {
	if err := validVolume(id); err != nil {
		return "", badName("image path", err)
	}
	return c.image(id), nil
}

// image is the image of a volume whose ID is a valid name.
func (c *Cloud) image(id cloud.VolumeID) string { return imagePath(c.images, id) }

// openLocked fails once c is closed. Called under op.
func (c *Cloud) openLocked() error {
	if c.lock == nil {
		return ErrClosed
	}
	return nil
}

// view returns the published world for reading, or ErrClosed.
func (c *Cloud) view() (*world, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return c.cur.Load(), nil
}

// publish makes w, durable, the world readers see. Called under op.
func (c *Cloud) publish(w *world) { c.cur.Store(w) }

// commit saves w and publishes it. Called under op.
func (c *Cloud) commit(w *world) error {
	if err := c.save(w); err != nil {
		return err
	}
	c.publish(w)
	return nil
}

// pastDeadline fails a call whose deadline has passed: it must not take
// effect any more (cloud.Provider).
func (c *Cloud) pastDeadline(ctx context.Context, what string) error {
	if d, ok := ctx.Deadline(); ok && !c.now().Before(d) {
		return fmt.Errorf("loop: %s: dropped, its deadline passed: %w", what, context.DeadlineExceeded)
	}
	return nil
}
