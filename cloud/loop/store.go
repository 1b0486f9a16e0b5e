package loop

// The data directory on disk: its layout, the state file and the image
// files. Every path is built here, from the canonical data directory and
// names that were checked (names.ValidName) first.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/durable"
	"github.com/tether/tether/cloud/files/realdir"
)

const (
	stateName  = "state.json"
	lockName   = "lock"
	imagesName = "images"

	stateFileMode = 0o600
	imageMode     = 0o600
	dirMode       = 0o700
)

// prepareDir makes the data directory and its images directory if needed
// and returns the data directory made absolute, with every symlink in it
// resolved (the kernel shows backing files by such paths), after checking
// that both are real directories.
func prepareDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if err := realdir.Check(real); err != nil {
		return "", err
	}
	images := filepath.Join(real, imagesName)
	if err := os.Mkdir(images, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if err := realdir.In(real, images); err != nil {
		return "", err
	}
	return real, nil
}

// imagePath is the image of a volume whose ID is a valid name.
func imagePath(images string, id cloud.VolumeID) string {
	return filepath.Join(images, string(id)+imageSuffix)
}

// loadWorld reads the state file. A missing one is a new cloud, unless
// images lie in the images directory: then the state was lost, and
// starting empty would hand their data to new volumes of the same names.
// A new cloud's empty state is written at once, so that no image is ever
// made before the state file exists.
func (c *Cloud) loadWorld() (*world, error) {
	data, err := os.ReadFile(c.statePath)
	if errors.Is(err, fs.ErrNotExist) {
		if imgs, _ := filepath.Glob(filepath.Join(c.images, "*"+imageSuffix)); len(imgs) > 0 {
			return nil, fmt.Errorf("loop: %s is missing but %d images lie in %s: refusing to start empty (restore the state file)", c.statePath, len(imgs), c.images)
		}
		w := newWorld()
		if err := c.save(w); err != nil {
			return nil, err
		}
		return w, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	w, err := decodeWorld(data)
	if err != nil {
		return nil, fmt.Errorf("loop: state file %s: %w", c.statePath, err)
	}
	return w, nil
}

// decodeWorld parses and validates a state file.
func decodeWorld(data []byte) (*world, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	w := &world{}
	if err := dec.Decode(w); err != nil {
		return nil, err
	}
	if err := w.validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// save writes w to the state file, durably, replacing it atomically.
func (c *Cloud) save(w *world) error {
	data, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	if err := c.write(c.statePath, append(data, '\n')); err != nil {
		return fmt.Errorf("loop: write %s: %w", c.statePath, err)
	}
	return nil
}

// writeState replaces the state file durably (durable.WriteFile).
func writeState(path string, data []byte) error {
	return durable.WriteFile(path, data, stateFileMode)
}

func syncDir(dir string) error {
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// makeImage creates the sparse image of a new volume, durably. A file
// left at its path (by a volume deleted before a crash let it remove its
// image) is replaced: a new volume never sees an old one's data. It never
// follows a symlink, and refuses to replace anything but a file or a
// symlink.
func makeImage(images string, id cloud.VolumeID, size int64) error {
	path := imagePath(images, id)
	if err := removeImage(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, imageMode)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(images)
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// prepareImage runs prepare on the image at path, then makes what it
// wrote durable (the image must still be a file: never a symlink).
func prepareImage(path string, prepare func(image string) error) error {
	if err := prepare(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeImage removes the file (or symlink) at path, if any, durably.
func removeImage(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not an image", path)
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
