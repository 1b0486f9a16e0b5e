package csitest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// makeTarget creates a NodePublishVolume's target path as the spec has the
// plugin do, its parent being the CO's: for access type Mount a directory
// (one already there will do), for Block a regular file, empty here, where
// a real plugin bind-mounts the device (a file already there will do, a
// directory will not).
func makeTarget(path string, block bool) error {
	if !block {
		if err := os.Mkdir(path, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return status.Errorf(codes.Internal, "creating the target: %v", err)
		}
		return nil
	}
	if isDir(path) {
		return status.Errorf(codes.InvalidArgument, "target %s is a directory: a block volume's target is a file, the plugin's to create", path)
	}
	if !isDir(filepath.Dir(path)) {
		// The CO creates it (the spec); this one did not.
		return status.Errorf(codes.InvalidArgument, "the parent of target %s is no directory", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o640)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return status.Errorf(codes.Internal, "creating the target: %v", err)
	}
	return nil
}
