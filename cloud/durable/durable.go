// Package durable writes files so that a crash leaves the old content or
// the new, whole, and the change survives once the call returns. A leaf:
// the store, the clouds, the node and the process share it.
package durable

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: a temporary file in the same
// directory (mode set before the data goes in), written and fsynced,
// renamed over path, and the directory fsynced. On failure path is as it
// was and no temporary file is left.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
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
		return errors.Join(err, removeTemp(name))
	}
	return SyncDir(dir)
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
