package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Bounds of Teardown and Reboot: a mount point can hang (a dead network
// filesystem, a device gone), and a teardown that waits on it forever
// holds up whatever comes after (a test's cleanup, a chaos run's power
// off).
const (
	// TeardownCallTimeout bounds each call: the scan's wait for every
	// mount's state, and each unmount.
	TeardownCallTimeout = 30 * time.Second
	// TeardownTimeout bounds a whole Teardown or Reboot.
	TeardownTimeout = 2 * time.Minute
)

// ErrUnmountHung: an unmount did not return within its deadline. It is
// left running (an unmount stuck in the kernel cannot be interrupted) and
// its mount counts as left in place.
var ErrUnmountHung = errors.New("agent: unmount did not return in time (left running)")

// Teardown unmounts everything Scan finds under dataDir (publishes first,
// then stages) with m, and removes the directories left empty. For
// throw-away data directories (tether demo, tests); an agent itself never
// unmounts what workloads still use. It is bounded by TeardownCallTimeout
// per call and TeardownTimeout overall (TeardownContext).
func Teardown(dataDir string, m mount.Mounter) error {
	ctx, cancel := context.WithTimeout(context.Background(), TeardownTimeout)
	defer cancel()
	return TeardownContext(ctx, dataDir, m, TeardownCallTimeout)
}

// Reboot unmounts everything Scan finds under dataDir as Teardown does,
// and leaves an empty directory where each mount was: what a machine finds
// of its pods' mounts after a reboot (chaos and tests power nodes off).
// Bounded as Teardown is.
func Reboot(dataDir string, m mount.Mounter) error {
	ctx, cancel := context.WithTimeout(context.Background(), TeardownTimeout)
	defer cancel()
	return RebootContext(ctx, dataDir, m, TeardownCallTimeout)
}

// TeardownContext is Teardown within ctx, each call within perCall (0: no
// bound but ctx's). It returns once every mount was tried or ctx is done,
// whichever comes first, and its error names every mount left in place:
// one whose unmount failed, hung (ErrUnmountHung) or was never tried
// (ctx's error).
func TeardownContext(ctx context.Context, dataDir string, m mount.Mounter, perCall time.Duration) error {
	return unmountAll(ctx, dataDir, m, perCall, nil)
}

// RebootContext is Reboot within ctx, bounded as TeardownContext is.
func RebootContext(ctx context.Context, dataDir string, m mount.Mounter, perCall time.Duration) error {
	return unmountAll(ctx, dataDir, m, perCall, func(path string) error { return os.MkdirAll(path, 0o750) })
}

// unmountAll unmounts every mount under dataDir, publishes first, calling
// after (if set) on each path unmounted. A mount whose state the scan
// could not learn in time (mount.Unknown) is unmounted all the same.
func unmountAll(ctx context.Context, dataDir string, m mount.Mounter, perCall time.Duration, after func(path string) error) error {
	l, err := layout.New(dataDir)
	if err != nil {
		return err
	}
	scanCtx, cancel := withTimeout(ctx, perCall)
	found, err := mount.ScanContext(scanCtx, l, m)
	cancel()
	if err != nil {
		return err
	}
	var errs []error
	for i := len(found.Entries) - 1; i >= 0; i-- { // pods/ sorts after plugins/
		e := found.Entries[i]
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("teardown %s: left, not tried: %w", e.Path, context.Cause(ctx)))
			continue
		}
		unmount := m.Unstage
		if e.Kind == mount.KindPublish {
			unmount = m.Unpublish
		}
		err := within(ctx, perCall, func() error { return unmount(e.Path) })
		if err == nil && after != nil {
			err = after(e.Path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("teardown %s: %w", e.Path, err))
		}
	}
	return errors.Join(errs...)
}

// within runs f in a goroutine of its own and waits for it at most d (0:
// no bound) and until ctx is done. A call that does not return in time
// is left running: its goroutine ends when the call returns.
func within(ctx context.Context, d time.Duration, f func() error) error {
	c, cancel := withTimeout(ctx, d)
	defer cancel()
	done := make(chan error, 1) // the goroutine never blocks on a send nobody takes
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-c.Done():
		select {
		case err := <-done: // returned just in time
			return err
		default:
			return fmt.Errorf("%w: %w", ErrUnmountHung, context.Cause(c))
		}
	}
}
