// Package reconciler is the pure state machine of a node agent (the
// kubelet volume manager's job): which volumes the workloads on this node
// want, which are staged and published, what to report in VolumesInUse,
// and which mount operation to start next. It never touches the disk,
// never reads the clock, never starts goroutines and never sees protobuf.
//
// It stages or publishes only while the latest persisted node status
// lists the volume in both VolumesInUse and VolumesAttached (I3); keeps a
// volume in VolumesInUse until it is fully unmounted; runs one operation
// at a time per volume, backing off per (volume, operation); lets a call
// past Config.OpTimeout fail and leaves its volume alone until the call
// returns (even one an earlier incarnation left running); and after a
// restart starts from what Scan found, acting only once both the desired
// state and the node status are known.
//
// See docs/design.md#the-node-agent.
package reconciler
