// Package mount owns making a volume's content visible at a path of the
// node agent's data directory: staging (one mount per node and volume),
// publishing (one per workload), undoing both, and reading back what is on
// disk after a restart (Scan). It counts the system calls of every
// operation (Syscalls).
//
// It never builds a path from a name (node/layout does), never touches
// anything outside the layout's root, never deletes data (only symlinks,
// empty directories and mounts), refuses to go through a symlink below
// the root, and keeps no state about mounts: every answer comes from the
// filesystem and the kernel. Operations on one target must be serialized
// by the caller.
//
// See docs/design.md#mounts-nodemount.
package mount
