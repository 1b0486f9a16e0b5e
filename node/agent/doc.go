// Package agent is the node agent: the actor that mounts, for the
// workloads scheduled on one node, the volumes the controller attached
// there (the kubelet volume manager's job). It is a thin shell (Runner
// over a Host, Mounts and Calls; agentActor provides them, and so does the
// simulation) over the pure core node/reconciler, with paths from
// node/layout and mounts from node/mount.
//
// It never blocks on a mount: each call runs in a goroutine of its own,
// one at a time per volume, under the core's deadline (OpTimeout), and a
// call hung in the kernel is tracked (Calls) across the agent's restarts,
// its volume left alone until it returns. At start it reads its data
// directory back, so a restart orphans nothing and mounts nothing twice;
// Stop waits for running calls at most StopGrace.
//
// See docs/design.md#the-node-agent.
package agent
