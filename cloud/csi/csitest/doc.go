// Package csitest is a stateful fake CSI driver for tests: Identity,
// Controller and Node services over one in-memory state of volumes, the
// nodes they are published to, and their staging and target paths. Serve
// serves it on a unix socket for a test, Listen outside one (csifake).
//
// It checks requests as the CSI spec asks (csi-test's sanity suite passes
// against it) and answers with the spec's codes; Config chooses among the
// shapes real drivers take. "Mounting" only creates and removes the
// target; Calls logs what a CO asked, the ground truth for tests. It
// stands in for csi-test's stateful mock driver, which v5 no longer ships.
//
// See docs/storage.md#any-csi-driver---csi-controller-socket---csi-node-socket.
package csitest
