// Package chaos runs tether under faults and proves it keeps its promises.
//
// Checker judges ground truth — the cloud's real attachments (the sim's,
// or the loop cloud's), the mounts the agents make (on the loop cloud,
// with the disk each one shows), the durable node statuses — never
// tether's own beliefs, and judges each change at the moment it happened:
// every source records what happens where it happens (the cloud at each
// change, the mounter before and after each mount(2), the store after each
// durable write, the runner before it pulls a machine's plug), one
// sequencer stamps the records, and the verdicts replay them in stamp
// order. No verdict reads the disk or the store later, so none depends on
// load. Run drives an embedded tether, on the sim, on real loop devices
// (loop.go) or on a fake CSI driver (csi.go: there the driver itself is
// the recording point of attachments and mounts, as it applies each
// call), through a seeded fault plan while workloads churn, then stops
// the faults and checks convergence (I5) on the disk and the cloud (on
// CSI: the driver's state), which nothing moves any more. RunDistributed
// does the same to a distributed tether, one process per part, and
// judges the timeline merged from what each process recorded (the
// cloud's watch, the journals of agents and members).
package chaos
