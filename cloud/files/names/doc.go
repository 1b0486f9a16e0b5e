// Package names holds the rules for the names tether's objects carry
// (volume IDs, node names, workload UIDs, plugin names): one leaf that the
// controller, the cloud and the node agent share. Every such name may
// become one path component on a node, so the rules refuse anything that
// could point elsewhere: separators, ".", "..", NUL, spaces, non-ASCII.
// It holds the rules for what a volume hands its storage driver too
// (driver.go: file system type, mount options, attributes, secret name).
//
// See docs/operating.md#documents.
package names
