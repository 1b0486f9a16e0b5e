// Package syncer is the pure core of the sync actor: it splits the nodes to
// verify into batches of the size the cloud allows (one cloud call per
// batch, never one per volume) and compares what the controller believes
// attached with what the cloud says each instance has. It does no I/O.
//
// See docs/design.md#how-the-pieces-fit.
package syncer
