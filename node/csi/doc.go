// Package csi is the node agent's side of a CSI driver: the node plugin
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
// the agent as the device path (cloud/csi.DevicePath). Paths are the
// caller's (node/layout makes them): it checks none. Unpublish and
// Unstage are idempotent: NOT_FOUND is success. Errors are classified as
// on the controller side (cloud/csi.MapError). It never retries and
// imports no actor code.
package csi
