// Package etcdserver runs a real single-member etcd as a child process on
// loopback: for tests, for `tether chaos --distributed` and for
// multi-process tests that share one store. It picks free ports, waits
// until etcd answers, and stops, kills and restarts it on the same data
// directory and ports. It never talks etcd's API beyond its health check
// and never serves anything beyond 127.0.0.1.
//
// See docs/chaos-and-simulation.md#across-processes-tether-chaos---distributed.
package etcdserver
