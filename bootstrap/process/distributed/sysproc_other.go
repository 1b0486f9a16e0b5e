//go:build !linux

package distributed

import "syscall"

// fleetProcAttr puts a fleet's process in its own process group.
func fleetProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
