//go:build !linux

package etcdserver

import "syscall"

// sysProcAttr: only Linux can tie etcd's life to its parent's.
func sysProcAttr() *syscall.SysProcAttr { return nil }
