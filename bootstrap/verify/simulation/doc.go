// Package simulation is tether's deterministic simulation tier: it runs
// the production shells' runners over the pure cores (actors/volume,
// actors/nodestatus, node/reconciler, actors/syncer) against the sim
// cloud, an in-memory store and a simulated disk per node, through a
// single-threaded, seeded event loop with a virtual clock, injecting only
// faults the real system can meet. It checks the safety invariants I1-I4
// after every change of the ground truth and I5 after the calm, and on a
// violation shrinks the fault plan to the smallest that still breaks it.
//
// It never starts goroutines, never reads the real clock and never
// sleeps: the same seed gives the same run, trace included.
//
// See docs/chaos-and-simulation.md#deterministic-simulation for the hosts,
// the fault model and the invariants.
package simulation
