//go:build !linux

package chaos

import "errors"

// mountedImage: loop devices are Linux's.
func mountedImage(string) (string, error) {
	return "", errors.New("chaos: loop devices need Linux")
}
