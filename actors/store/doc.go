// Package store is the controller's source of truth: the desired state
// (volumes, nodes, workloads) and the persisted node statuses, from which
// actors rebuild on every (re)start. The interface is narrow: Memory is
// the in-process implementation, Bolt the durable one of one process (one
// bbolt file), Etcd the durable one several processes share. Writes of an
// actor's own objects may be fenced (Fences), so that of two activations
// of one actor only the last to claim it writes. A store never calls
// actors or the cloud.
//
// See docs/operating.md#recovery-of-a-lost-or-damaged-store.
package store
