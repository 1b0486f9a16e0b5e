// Package node is the node agent: the actor that mounts, for the workloads
// scheduled on one node, the volumes the controller attached there (the
// kubelet volume manager's job). It is a thin shell over the pure core in
// node/agent; paths come from node/layout (names validated first) and mounts
// from node/mount. Mount operations run in goroutines, one at a time per
// volume, and report back as messages. At start the agent reads its data
// directory back (reconstruction), so a restart orphans nothing and mounts
// nothing twice.
package node
