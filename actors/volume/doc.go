// Package volume is the pure state machine of one volume on the controller
// side: where it is wanted, where it is attached, and which cloud operation
// to start next. It never calls the cloud, never reads the clock, never
// starts goroutines and never sees protobuf: its caller (the volume actor)
// feeds it events with the current time and carries out the effects it
// returns, in order.
//
// The rules it enforces (DESIGN.md):
//   - I1: an exclusive volume is attached to a second node only when no
//     attachment of any state exists elsewhere (Multi-Attach otherwise).
//   - I2: a volume the node reports in use is detached only when the node is
//     out of service, or NotReady (and detach requested) for longer than
//     MaxWaitForUnmount, unless force detach is disabled.
//   - I4: a detach starts with PrepareDetach; CallDetach follows only after
//     DetachPrepared{OK}.
//   - I6: a failed attach or detach leaves the attachment Uncertain.
//   - one cloud operation at a time for an exclusive volume, one per node
//     for a multi-node volume; failures back off per (node, operation).
package volume
