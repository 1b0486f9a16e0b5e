//go:build !linux

package loop

import (
	"fmt"
	"os"
	"runtime"
)

// Off Linux there are no loop devices: Open fails with ErrUnavailable
// before any of these is called.

const noFollow = 0

type kernel struct{}

var errNotLinux = fmt.Errorf("%w: loop devices exist on Linux only, not on %s", ErrUnavailable, runtime.GOOS)

func checkHost() error { return errNotLinux }

func (kernel) bind(string, bool) (string, error)                { return "", errNotLinux }
func (kernel) release(string, func(binding) bool) (bool, error) { return false, errNotLinux }
func (kernel) inspect(string) (binding, bool, error)            { return binding{}, false, errNotLinux }
func (kernel) backings() (map[string]string, error)             { return nil, errNotLinux }
func identify(string) (fileID, error)                           { return fileID{}, errNotLinux }
func lockDir(string) (*os.File, error)                          { return nil, errNotLinux }
