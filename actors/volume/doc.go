// Package volume is the pure state machine of one volume on the controller
// side: where it is wanted, where it is attached, and which cloud
// operation to start next. It never calls the cloud, never reads the
// clock, never starts goroutines and never sees protobuf: the volume
// actor feeds it events with the current time and carries out the effects
// it returns, in order.
//
// It enforces I1 (no second attachment of an exclusive volume while any
// other exists: Multi-Attach), I2 (a volume in use is detached only from
// a node out of service, or NotReady past MaxWaitForUnmount with force
// detach enabled), I4 (PrepareDetach, then CallDetach only after
// DetachPrepared{OK}) and I6 (a failed call leaves the attachment
// Uncertain); one cloud operation at a time for an exclusive volume, one
// per node for a multi-node one; failures back off per (node, operation).
//
// See docs/design.md#the-safety-invariants.
package volume
