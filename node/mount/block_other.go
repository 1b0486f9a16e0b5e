//go:build !linux

package mount

import (
	"errors"
	"fmt"

	"github.com/tether/tether/node/layout"
)

// NewBlock returns a Mounter whose operations fail with
// errors.ErrUnsupported: block devices are mounted on Linux only.
func NewBlock(layout.Layout, ...BlockOption) Mounter { return blockUnsupported{} }

type blockUnsupported struct{}

func (blockUnsupported) Name() string                       { return "block" }
func (blockUnsupported) Stage(string, string) error         { return errBlockUnsupported }
func (blockUnsupported) Unstage(string) error               { return errBlockUnsupported }
func (blockUnsupported) Publish(string, string, bool) error { return errBlockUnsupported }
func (blockUnsupported) Unpublish(string) error             { return errBlockUnsupported }
func (blockUnsupported) Inspect(string) (State, string, error) {
	return Absent, "", errBlockUnsupported
}

var errBlockUnsupported = fmt.Errorf("mount: block devices need Linux: %w", errors.ErrUnsupported)
