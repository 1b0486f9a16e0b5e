//go:build !linux

package agent

import (
	"errors"
	"fmt"

	"github.com/tether/tether/cloud"
)

// holdLoop: loop devices are Linux's; elsewhere no path is one.
func holdLoop(string) (heldLoop, error) {
	return heldLoop{}, fmt.Errorf("%w: %w", errors.New("loop devices need Linux"), cloud.ErrNotFound)
}

func loopBacking(string) (string, string, error) {
	_, err := holdLoop("")
	return "", "", err
}

func loopReadOnly(string) (bool, error) { return false, nil }

func otherLoops(string, string) ([]boundLoop, error) { return nil, nil }
