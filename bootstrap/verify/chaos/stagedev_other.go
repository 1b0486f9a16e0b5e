//go:build !linux

package chaos

import (
	"fmt"
	"os"
)

// showsSource reports whether the mount at path shows the directory src
// (the same file), and what it shows; block devices need Linux.
func showsSource(path, src string) (bool, string, error) {
	at, err := os.Stat(path)
	if err != nil {
		return false, "", err
	}
	want, err := os.Stat(src)
	if err != nil {
		return false, "", err
	}
	if want.Mode()&os.ModeDevice != 0 {
		return false, "", fmt.Errorf("chaos: cannot tell the device under %s off Linux", path)
	}
	return os.SameFile(at, want), "another directory", nil
}
