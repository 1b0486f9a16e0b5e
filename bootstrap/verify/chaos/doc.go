// Package chaos runs tether under faults and proves it keeps its
// promises. Run drives an embedded tether (on the sim, on loop devices:
// loop.go, or on a fake CSI driver: csi.go) through a seeded fault plan
// while workloads churn, then stops the faults and checks convergence
// (I5); RunDistributed does the same to one process per part.
//
// Checker judges ground truth (the cloud's attachments, the agents'
// mounts, the durable node statuses), never tether's beliefs, and judges
// each change at the moment it happened: every source records where it
// happens, one sequencer stamps the records, and verdicts replay them in
// stamp order, never re-reading the disk or the store, so no verdict
// depends on load.
//
// See docs/chaos-and-simulation.md#the-invariant-checker.
package chaos
