// Package bench is tether bench: the embedded runtime as tether up runs it
// (durable store and sim cloud in a temporary directory, a mounting agent
// per node, changes through the API's apply path) driven through the
// phases of a fleet's life (fleet_start, verify, restart, node_loss,
// churn, teardown), each timed until the ground truth (the cloud's
// attachments, the agents' mounts) shows it done, next to a baseline of
// bare Proto.Actor delivering as many messages in the same run.
//
// See docs/performance.md#a-fleets-life-tether-bench for what each
// phase does.
package bench
