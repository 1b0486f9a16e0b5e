// Package mount owns making a volume's content visible at a path of the
// node agent's data directory: staging (one global mount per node and
// volume), publishing (one mount per workload), undoing both, and reading
// back what is on disk after a restart (Scan).
//
// It never builds a path from a name (package layout does, after validating
// the name), never creates, changes or removes anything outside the
// layout's root, and never deletes data: it removes only symlinks, empty
// directories and mounts. Below the root it refuses to create or remove
// through a symlink (each component is checked before use; a concurrent
// writer to the data directory is outside its threat model). On Linux the
// symlink and bind mounters hold the data directory, pods/ and each
// plugin's mounts/ open and work relative to them, checking what lies
// below with openat2(2) (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) rather than
// path by path (see tree); elsewhere, or without openat2, they check
// each component of the path. It keeps no state about mounts: every
// answer comes from the filesystem and the kernel, asked about one path
// at a time where it can tell; reads of the whole mount table are shared
// among the callers that ask at the same time, never kept for later ones.
//
// On-disk lifecycle: pods/ and plugins/<plugin>/mounts/ are made by the
// first operation that needs them and never removed (a node's next
// volume needs them again); a workload's own directories,
// pods/<uid>/volumes/<plugin>, volumes and <uid>, are removed by the
// Unpublish that leaves them empty. Scan ignores empty directories.
//
// The system calls of every operation are counted (Syscalls), so that
// tests and tether bench can tell what a stage, a publish, an unpublish
// or an unstage costs.
//
// Operations on different targets may run concurrently; operations on the
// same target must be serialized by the caller (the node agent runs them
// per volume).
package mount
