//go:build !linux

package node

import (
	"errors"
	"fmt"

	"github.com/tether/tether/cloud"
)

// loopBacking: loop devices are Linux's; elsewhere no path is one.
func loopBacking(string) (string, string, error) {
	return "", "", fmt.Errorf("%w: %w", errors.New("loop devices need Linux"), cloud.ErrNotFound)
}

func loopReadOnly(string) (bool, error) { return false, nil }

func otherLoops(string, string) ([]boundLoop, error) { return nil, nil }
