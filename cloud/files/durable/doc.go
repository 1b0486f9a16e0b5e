// Package durable writes files so that a crash leaves the old content or
// the new, whole, and the change survives once the call returns. It is
// the module's one temporary-file-and-rename (or link) writer: the store,
// the clouds, the node, the certificates and the process share it. A
// leaf: it imports nothing of tether's.
//
// See docs/design.md#layering.
package durable
