package distributed

import "syscall"

// fleetProcAttr puts a fleet's process in its own process group (so a
// kill reaches what it starts) and has the kernel SIGKILL it when the
// process that started it dies (a test binary killed or timed out): no
// member, agent or cloud outlives its fleet. Pdeathsig follows the OS
// thread that started the child; Go ends a thread only when a goroutine
// locked to it exits, which nothing that starts a fleet's process does.
func fleetProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
