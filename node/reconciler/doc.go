// Package reconciler is the pure state machine of a node agent (the kubelet
// volume manager's job): which volumes the workloads on this node want,
// which are staged (the node's global mount) and published (each
// workload's mount), what to report in VolumesInUse, and which mount
// operation to start next. It never touches the disk, never reads the clock,
// never starts goroutines and never sees protobuf.
//
// Rules:
//   - I3: a volume is staged or published only when the controller's latest
//     persisted status lists it both in VolumesInUse (our report was heard)
//     and in VolumesAttached (it is attached here).
//   - a volume stays in VolumesInUse until it is fully unmounted (no stage,
//     no publish, not even an uncertain one); only then may the controller
//     detach it.
//   - one operation at a time per volume; volumes proceed in parallel;
//     failures back off per (volume, operation).
//   - a call past its deadline (Config.OpTimeout) fails its operation and
//     backs off its volume only; its mount becomes uncertain (still in
//     VolumesInUse) and the volume is not operated on again before the
//     call has returned, so two calls never touch one volume's paths at
//     once. The same holds for calls an earlier incarnation left running.
//   - after a restart the machine starts from what Scan found on disk:
//     working mounts are kept without remounting, half-done ones are
//     completed if wanted and rolled back if not, and nothing is done
//     until both the desired state and the node status are known.
package reconciler
