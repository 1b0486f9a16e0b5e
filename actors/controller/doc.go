// Package controller holds the thin actor shells of the controller side:
// one volume actor per volume, one node actor per node, the sync actor,
// and the lookup that resolves an identity to a live actor.
//
// Each shell is a runner (VolumeRunner, NodeRunner, SyncRunner: messages
// in, its pure core stepped, effects carried out) over a host interface
// (VolumeHost, NodeHost, SyncHost) that a thin Proto.Actor adapter
// provides (volume_shell.go, node_shell.go, sync_actor.go), and the
// deterministic simulation too. Receive never blocks on the cloud: calls
// run off the turn and report back as messages. Every actor rebuilds its
// state from the store and the cloud when it starts, so a restart loses
// nothing.
//
// See docs/design.md#roles-and-actors.
package controller
