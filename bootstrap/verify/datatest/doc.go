// Package datatest writes checksummed files through a workload's mount and
// verifies them after the volume moved, restarted or survived a crash: the
// data-integrity tests of the loop cloud (bootstrap, cmd/tether) share it.
//
// See docs/storage.md#real-storage---cloud-loop.
package datatest
