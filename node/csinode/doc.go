// Package csinode is the node agent's side of a CSI driver: the node
// plugin on this node's unix socket, which stages and publishes the
// volumes the controller attached through cloud/csi. DialNode reads the
// plugin's node ID, its max_volumes_per_node and whether it stages;
// Mounter (a mount.Mounter) and Devices (an agent.Devices) adapt it to
// the agent.
//
// It does what the CSI spec asks of a CO (directories made and removed
// around the plugin's calls, the publish context and capability carried
// by the device path), records every call before and after it in
// StateFile so a restart neither repeats nor forgets one, treats
// NOT_FOUND on unpublish and unstage as success, checks no path (they are
// node/layout's), never retries and imports no actor code.
//
// See docs/storage.md#the-node-side-nodecsinode.
package csinode
