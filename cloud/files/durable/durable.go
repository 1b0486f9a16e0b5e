// Package durable writes files so that a crash leaves the old content or
// the new, whole, and the change survives once the call returns. A leaf:
// the store, the clouds, the node and the process share it.
package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile replaces path with data: a temporary file in the same
// directory (mode set before the data goes in), written and fsynced,
// renamed over path, and the directory fsynced. On failure path is as it
// was and no temporary file is left, unless only the directory's fsync
// failed (see Replace).
func WriteFile(path string, data []byte, mode os.FileMode) error {
	_, err := Replace(path, data, mode)
	return err
}

// Replace is WriteFile, and says whether the rename happened: then path
// holds data, durably unless err is not nil (the directory's fsync
// failed: a crash may bring the old content back). Each call that
// renamed made two fsyncs, the file's and the directory's.
func Replace(path string, data []byte, mode os.FileMode) (renamed bool, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, TempPrefix(filepath.Base(path))+"*")
	if err != nil {
		return false, err
	}
	name := tmp.Name()
	err = tmp.Chmod(mode)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		return false, errors.Join(err, removeTemp(name))
	}
	if err := SyncDir(dir); err != nil {
		return true, fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return true, nil
}

// TempPrefix is the name prefix of the temporary files that WriteFile
// makes for the file named base.
func TempPrefix(base string) string { return "." + base + ".tmp-" }

// RemoveStaleTemps removes (best effort) the temporary files that a
// process killed in WriteFile of path left behind.
func RemoveStaleTemps(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix(base)) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// removeTemp removes a temporary file that was not renamed.
func removeTemp(name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SyncDir makes the creations, renames and removals in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
