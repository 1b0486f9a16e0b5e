//go:build !linux

package mount

import (
	"errors"
	"fmt"

	"github.com/tether/tether/node/layout"
)

// NewBind returns a Mounter whose operations fail with errors.ErrUnsupported:
// bind mounts are implemented on Linux only.
func NewBind(layout.Layout) Mounter { return unsupported{} }

type unsupported struct{}

func (unsupported) Name() string                          { return "bind" }
func (unsupported) Stage(string, string) error            { return errUnsupported }
func (unsupported) Unstage(string) error                  { return errUnsupported }
func (unsupported) Publish(string, string, bool) error    { return errUnsupported }
func (unsupported) Unpublish(string) error                { return errUnsupported }
func (unsupported) Inspect(string) (State, string, error) { return Absent, "", errUnsupported }

var errUnsupported = fmt.Errorf("mount: bind mounts need Linux: %w", errors.ErrUnsupported)

func probeBind(layout.Layout) error { return errUnsupported }
