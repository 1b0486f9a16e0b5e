package durable

import (
	"errors"
	"fmt"
	"io/fs"
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
	name, err := writeTemp(path, mode, writeData(data))
	if err != nil {
		return false, err
	}
	if err := os.Rename(name, path); err != nil {
		return false, errors.Join(err, removeTemp(name))
	}
	return true, syncDirOf(path)
}

// Create writes data to path, which must not exist: as WriteFile, but the
// temporary file is linked to path, which fails if anything is there (a
// file, a directory, a dangling symlink), even one that appears while
// Create runs. Then the error matches fs.ErrExist, what is at path is
// left as it was, and no temporary file is left. For files that must
// never be replaced: keys, certificates, tokens.
func Create(path string, data []byte, mode os.FileMode) error {
	return CreateFrom(path, mode, writeData(data))
}

// CreateFrom is Create with the content written by fill, given the open
// temporary file (fill may also open it again by its name, as a database
// does; it must not close f). What fill wrote is fsynced before the link.
func CreateFrom(path string, mode os.FileMode, fill func(f *os.File) error) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("create %s: %w", path, fs.ErrExist)
	}
	name, err := writeTemp(path, mode, fill)
	if err != nil {
		return err
	}
	err = os.Link(name, path)
	rerr := removeTemp(name)
	if err != nil { // matches fs.ErrExist if path exists
		return fmt.Errorf("create %s: %w", path, errors.Join(err, rerr))
	}
	return errors.Join(rerr, syncDirOf(path))
}

// writeTemp makes a temporary file beside path with mode (set before
// anything goes in), has fill write it, fsyncs and closes it, and returns
// its name. On failure it removes the file.
func writeTemp(path string, mode os.FileMode, fill func(f *os.File) error) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), TempPrefix(filepath.Base(path))+"*")
	if err != nil {
		return "", err
	}
	name := tmp.Name()
	err = tmp.Chmod(mode)
	if err == nil {
		err = fill(tmp)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", errors.Join(err, removeTemp(name))
	}
	return name, nil
}

func writeData(data []byte) func(f *os.File) error {
	return func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}
}

// TempPrefix is the name prefix of the temporary files that WriteFile
// and Create make for the file named base.
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

// syncDirOf fsyncs path's directory, which makes a rename or link there
// durable.
func syncDirOf(path string) error {
	dir := filepath.Dir(path)
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// syncDir is SyncDir; the package's tests replace it to see each
// directory sync, or fail it.
var syncDir = SyncDir

// SyncDir makes the creations, renames and removals in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
