// Package etcdtest starts a real etcd for one test (etcdserver) and stops
// it when the test ends, failed or not. A missing etcd binary fails the
// test with the way to install it: a test that needs etcd never skips.
//
// See CONTRIBUTING.md#set-up.
package etcdtest
