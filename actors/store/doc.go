// Package store is the controller's source of truth: the desired state
// (volumes, nodes, workloads) and the persisted node statuses. Actors rebuild
// from it on every (re)start. The interface is narrow so that a durable
// embedded database and an etcd backend can implement it; Memory is the
// in-process implementation, Bolt the durable one of one process (one file,
// bbolt), Etcd the durable one that several processes share. Writes of an
// actor's own objects may be fenced (Fences), so that of two activations of
// one actor only the last to claim it writes. A store never calls actors
// or the cloud.
package store
