package agent

import (
	"errors"
	"fmt"
	"os"

	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Teardown unmounts everything Scan finds under dataDir (publishes first,
// then stages) with m, and removes the directories left empty. For
// throw-away data directories (tether demo, tests); an agent itself never
// unmounts what workloads still use.
func Teardown(dataDir string, m mount.Mounter) error {
	return unmountAll(dataDir, m, nil)
}

// Reboot unmounts everything Scan finds under dataDir as Teardown does,
// and leaves an empty directory where each mount was: what a machine finds
// of its pods' mounts after a reboot (chaos and tests power nodes off).
func Reboot(dataDir string, m mount.Mounter) error {
	return unmountAll(dataDir, m, func(path string) error { return os.MkdirAll(path, 0o750) })
}

// unmountAll unmounts every mount under dataDir, publishes first, calling
// after (if set) on each path unmounted.
func unmountAll(dataDir string, m mount.Mounter, after func(path string) error) error {
	l, err := layout.New(dataDir)
	if err != nil {
		return err
	}
	found, err := mount.Scan(l, m)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(found.Entries) - 1; i >= 0; i-- { // pods/ sorts after plugins/
		e := found.Entries[i]
		if e.Kind == mount.KindPublish {
			err = m.Unpublish(e.Path)
		} else {
			err = m.Unstage(e.Path)
		}
		if err == nil && after != nil {
			err = after(e.Path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("teardown %s: %w", e.Path, err))
		}
	}
	return errors.Join(errs...)
}
