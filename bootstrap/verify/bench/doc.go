// Package bench is tether bench: the embedded runtime as tether up runs it
// (durable store and durable sim cloud in a temporary directory, a node
// agent per node mounting, changes through the API's apply path), driven
// through the phases of a fleet's life and timed, next to a baseline of
// bare Proto.Actor delivering as many messages in the same run.
//
// Phases, each timed until the ground truth (the cloud's attachments, the
// mounts the agents made) shows it done:
//
//   - fleet_start: V workloads of one exclusive volume each, over N
//     nodes, applied in one apply; until every volume is attached and
//     mounted on its workload's node.
//   - verify: one verification pass of the sync actor.
//   - restart: the process state is stopped (controller, agents, store,
//     cloud) and started again on the same data directory; until the
//     controller has restored every volume and every agent is ready, with
//     nothing attached or mounted twice and nothing detached.
//   - node_loss: 10% of the instances are terminated (losing their
//     attachments; their agents die with them) and started again, agents
//     and all; until all are attached again. Each returning agent has its
//     node verified at once (SyncNodes), not at the next periodic pass.
//   - churn: 10% of the workloads move to another node; until each of
//     their volumes is attached and mounted there only.
//   - teardown: every workload and volume is deleted; until nothing is
//     attached or mounted.
package bench
