// Package nodestatus is the pure state machine of one node's status on the
// controller side: VolumesAttached (what the controller reports attached,
// so the node may mount it), VolumesInUse (what the node agent reports
// mounted or mounting), heartbeat health and the out-of-service mark. It
// never does I/O, never reads the clock and never sees protobuf.
//
// Every change that others rely on is persisted before anyone is told of
// it: Persist comes first; after a failed Persist the shell drops the
// effects and steps PersistFailed, which restores the last persisted
// status and refuses pending detach preparations (I4).
//
// See docs/design.md#the-safety-invariants.
package nodestatus
