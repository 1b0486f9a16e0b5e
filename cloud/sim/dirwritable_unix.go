//go:build unix

package sim

import "golang.org/x/sys/unix"

// dirWritable reports why this process cannot create files in dir, if it
// cannot: the error wraps the errno (EACCES, EROFS, ENOENT).
func dirWritable(dir string) error {
	return unix.Access(dir, unix.W_OK)
}
