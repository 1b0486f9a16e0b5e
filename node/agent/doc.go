// Package agent is the node agent: the actor that mounts, for the workloads
// scheduled on one node, the volumes the controller attached there (the
// kubelet volume manager's job). It is a thin shell over the pure core in
// node/reconciler; paths come from node/layout (names validated first) and mounts
// from node/mount. At start the agent reads its data directory back
// (reconstruction), so a restart orphans nothing and mounts nothing twice.
//
// The agent never blocks on a mount. Each mount call runs in a goroutine of
// its own (one at a time per volume) and reports back as a message; the
// core gives it a deadline (OpTimeout), after which only its volume backs
// off. A call that hangs in the kernel cannot be interrupted: Calls keeps
// track of it across the agent's restarts, and its volume is left alone
// until it returns. The disk scan at start runs in a goroutine too, and
// gives up on a mount whose state does not come within OpTimeout. Stop
// waits for running calls at most StopGrace.
//
// The shell is split in two: Runner (runner.go, agent_effects.go) is plain
// code over a Host (send to the controller, send to itself, a timer, the
// clock, events), Mounts and Calls; agentActor is the thin Proto.Actor
// adapter that provides them. The simulation
// (bootstrap/verify/simulation) runs the same Runner over its scheduler,
// its simulated disk and a Calls whose calls it schedules (NewCallsOn).
package agent
