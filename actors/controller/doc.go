// Package controller holds the thin actor shells of the controller side:
// one volume actor per volume, one node actor per node, the sync actor, and
// the lookup that resolves an identity to a live actor. Each shell converts
// protobuf messages into events of its pure core (packages volume,
// nodestatus, syncer), steps it and carries out the effects. Cloud calls run
// in goroutines and report back to the actor as messages; Receive never
// blocks on the cloud. Every actor rebuilds its state on *actor.Started from
// the store and the cloud, so a restart (a new instance) loses nothing.
//
// Each shell is split in two: a runner (VolumeRunner, NodeRunner,
// SyncRunner: plain code that converts messages, steps the core and
// carries out its effects) over a host interface (VolumeHost, NodeHost,
// SyncHost: sends, timers, the clock, cloud calls off the turn, the store,
// events), and the thin Proto.Actor adapter that provides the host
// (volume_shell.go, node_shell.go, sync_actor.go). The deterministic
// simulation (bootstrap/verify/simulation) hosts the same runners.
package controller
