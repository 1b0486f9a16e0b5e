package etcdserver

import "syscall"

// sysProcAttr has the kernel kill etcd when the process that started it
// dies (a test binary that panics or times out): no etcd outlives its
// parent. Pdeathsig follows the OS thread that started the child; Go ends
// a thread only when a goroutine locked to it exits, which nothing that
// starts etcd does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
