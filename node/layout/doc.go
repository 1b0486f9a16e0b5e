// Package layout owns the node agent's paths on disk, in Kubernetes'
// layout under the data directory:
//
//	<root>/pods/<workload-uid>/volumes/<plugin>/<volume>   (publish)
//	<root>/plugins/<plugin>/mounts/<volume>                (stage)
//
// It validates every name before building a path and checks that every
// path is inside the root, so no name, hostile or mistaken, can point
// outside the data directory. It never touches the filesystem (no create,
// read, resolve or remove): paths are lexical, and symlinks on disk are
// node/mount's business.
//
// See docs/design.md#the-node-agent.
package layout
