// Package csinode is the node agent's side of a CSI driver: the node plugin
// listening on this node's unix socket, which stages and publishes (mounts)
// the volumes tether's controller attached through cloud/csi. DialNode
// reads the plugin's node ID (the "instance" the controller publishes
// to: the agent reports it, and the controller's Provider learns it with
// SetNodeID), its max_volumes_per_node and whether it stages volumes.
//
// It does as the CSI spec asks of a CO: it creates the staging directory
// and the target's parent before asking the plugin (the plugin creates
// the target itself), removes the staging directory after a successful
// unstage and the target if the plugin left it, and gives the plugin the
// publish context that the controller's attach returned, which reaches
// the agent as the device path (cloud/csi.DevicePathFor), with how the
// volume is used: the Mounter asks for the capability the controller
// published with, and reads the secrets it names from this machine's
// data directory (MounterConfig.Secrets). Paths are the
// caller's (node/layout makes them): it checks none. Unpublish and
// Unstage are idempotent: NOT_FOUND is success. Errors are classified as
// on the controller side (cloud/csi.MapError). It never retries and
// imports no actor code.
//
// The node agent uses it through two adapters. Mounter is a mount.Mounter
// whose stage, publish, unpublish and unstage are the plugin's, at the
// agent's layout paths; since a CO cannot ask a plugin what it has
// mounted (and a plugin may mount nothing visible), the Mounter records
// every call in StateFile, under the node's data directory, before it is
// sent and after it succeeded, and answers Inspect (the agent's
// reconstruction after a restart) from those records, trusting them only
// within the boot they were written in. Devices is the agent's
// agent.Devices: it hands the controller's device path to the Mounter as
// it came, asking the controller plugin nothing (the agent stages on
// tether's own handshake, I3).
package csinode
