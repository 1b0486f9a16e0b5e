// Package realdir checks that a directory is what its path says: a real
// directory, reached through no symlink, inside the root it must be in.
// The sim cloud checks a volume's content with it before handing it out,
// and a node's mounter checks a mount's source (a bind mount follows
// every symlink in its source, so a planted symlink would show /etc, say,
// to a workload). A leaf: the cloud and the node share it.
//
// See docs/design.md#the-node-agent.
package realdir
