package chaos

// A run on the loop cloud: real loop devices over image files, formatted
// ext4 and mounted by the agents' block mounter. What differs from the
// sim: the cloud's faults come from a Faulty in front of it, every volume
// is exclusive, the checker also judges which disk each mount shows
// (CheckImages), and every mount and loop device is released at the end.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/agent"
)

// account is what a run asks of its cloud: the embedded runtime's
// Account, and what the cloud does on its own: replacing an instance,
// detaching a volume from its console. The sim's and the loop cloud's
// accounts both have them (the loop's observed, as the sim's are).
type account interface {
	process.Account
	Replace(n cloud.NodeName) (cloud.InstanceID, error)
	ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error
}

// imager is the loop cloud's: where a volume's image file is.
type imager interface {
	ImagePath(vol cloud.VolumeID) (string, error)
}

// checkLoop refuses what a run on the loop cloud cannot do: breaking I1
// (the loop cloud refuses a second exclusive attach itself, so tether's
// broken rule could never show), and a data directory that holds
// anything (the run releases every loop device of its cloud at the end:
// it must be its own).
func checkLoop(cfg Config) error {
	if cfg.Break == "I1" {
		return errors.New("chaos: cannot break I1 on the loop cloud: it refuses a second exclusive attach (cloud.ErrAttachedElsewhere) whatever tether decides, so the broken rule never shows; break it on the sim, which is permissive")
	}
	if cfg.DataDir == "" {
		return nil
	}
	entries, err := os.ReadDir(cfg.DataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("chaos: data directory: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("chaos: data directory %s is not empty: a chaos run on the loop cloud releases every loop device and mount of its data directory at the end; give it a new or empty one", cfg.DataDir)
	}
	return nil
}

// loopDir makes dir absolute with its symlinks resolved, as the kernel
// shows the backing files of loop devices and the mount table its mount
// points.
func loopDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// releaseLoop stops e (nil: it never started), unmounts everything its
// agents mounted and releases every loop device bound to an image of the
// loop cloud under dir.
func releaseLoop(e *process.Embedded, dir string) error {
	var errs []error
	if e != nil {
		errs = append(errs, e.Stop())
		errs = append(errs, unmountNodes(e))
	}
	errs = append(errs, process.ReleaseLoop(dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chaos: releasing the loop cloud under %s (see docs/storage.md: Cleaning up): %w", dir, err)
	}
	return nil
}

// unmountNodes unmounts everything under each of e's node directories.
func unmountNodes(e *process.Embedded) error {
	var errs []error
	for _, n := range e.NodeNames {
		m, err := e.Mounter(n)
		if err == nil {
			err = agent.Teardown(e.NodeDir(n), m)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// trustingLoopDevices breaks I3 in the wiring on the loop cloud (Break
// "I3-device"): it hands the agent's mounter any device path as given,
// unchecked, as an agent shell that trusted the paths in a stale node
// status would: a released device, or one bound since to another volume's
// image.
type trustingLoopDevices struct{}

func (trustingLoopDevices) Source(_ context.Context, _ cloud.VolumeID, device string) (string, func(), error) {
	return device, func() {}, nil
}
