// Package nodestatus is the pure state machine of one node's status on the
// controller side: VolumesAttached (what the controller reports attached, so
// the node may mount it), VolumesInUse (what the node agent reports mounted
// or mounting), heartbeat health and the out-of-service mark. It never does
// I/O, never reads the clock and never sees protobuf.
//
// Every change that others rely on is persisted before anyone is told of it:
// the Persist effect comes first, and the shell drops the effects after a
// failed Persist and steps PersistFailed, which restores the last persisted
// status and refuses pending detach preparations (I4: no detach unless the
// volume's removal from VolumesAttached is durable).
package nodestatus
