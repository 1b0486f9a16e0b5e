package process

// The node plugins of a CSI account: one per node, each on the machine
// it serves. An embedded tether runs its nodes n1..nN on one machine, so
// it dials N node plugin sockets (the fake driver serves one per node ID;
// a real driver runs one node plugin per machine, which distributed mode
// reaches through each machine's own agent).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tether/tether/cloud"
	nodecsi "github.com/tether/tether/node/csinode"
)

// csiNodePlugin is one node's plugin.
type csiNodePlugin struct {
	name   cloud.NodeName
	plugin *nodecsi.Node
	id     cloud.InstanceID // its NodeGetInfo node_id
}

// nodeSockets is the node plugin socket of each node, n1 first: the
// NodeSockets of cfg, or its NodeSocket alone.
func (cfg CSIConfig) nodeSockets() []string {
	if len(cfg.NodeSockets) > 0 {
		return cfg.NodeSockets
	}
	if cfg.NodeSocket != "" {
		return []string{cfg.NodeSocket}
	}
	return nil
}

// dialNodes dials the node plugin of each node (n1..nN in the order of
// sockets) and checks that no two report one node ID.
func dialNodes(ctx context.Context, sockets []string) ([]*csiNodePlugin, error) {
	var out []*csiNodePlugin
	closeAll := func() error {
		var errs []error
		for _, n := range out {
			errs = append(errs, n.plugin.Close())
		}
		return errors.Join(errs...)
	}
	owner := map[cloud.InstanceID]cloud.NodeName{}
	for i, socket := range sockets {
		name := cloud.NodeName(fmt.Sprintf("n%d", i+1))
		p, err := nodecsi.DialNode(ctx, socket)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("csi node plugin of %s at %s: %w", name, socket, err), closeAll())
		}
		n := &csiNodePlugin{name: name, plugin: p, id: p.ID()}
		out = append(out, n)
		if other, dup := owner[n.id]; dup {
			return nil, errors.Join(fmt.Errorf("csi: the node plugins of %s and %s both report node ID %q: give each node the socket of its own node plugin", other, name, n.id), closeAll())
		}
		owner[n.id] = name
	}
	return out, nil
}

// nodeIDs maps each node to its plugin's node ID.
func (a *csiAccount) nodeIDs() map[cloud.NodeName]cloud.InstanceID {
	out := make(map[cloud.NodeName]cloud.InstanceID, len(a.nodes))
	for _, n := range a.nodes {
		out[n.name] = n.id
	}
	return out
}

// nodeNamed is node's plugin, nil if tether runs no such node.
func (a *csiAccount) nodeNamed(node cloud.NodeName) *csiNodePlugin {
	for _, n := range a.nodes {
		if n.name == node {
			return n
		}
	}
	return nil
}

// nodeOf is the node whose plugin reports inst, nil if none does.
func (a *csiAccount) nodeOf(inst cloud.InstanceID) *csiNodePlugin {
	for _, n := range a.nodes {
		if n.id == inst {
			return n
		}
	}
	return nil
}

// instances are the node IDs of every node, in node order.
func (a *csiAccount) instances() []cloud.InstanceID {
	out := make([]cloud.InstanceID, len(a.nodes))
	for i, n := range a.nodes {
		out[i] = n.id
	}
	return out
}

// checkNodes compares the node plugins with the controller's driver and
// with the node IDs CSIAccountFile recorded; a replaced machine (a new
// ID for a node) is a warning.
func (a *csiAccount) checkNodes(driver string, was map[cloud.NodeName]cloud.InstanceID) (warn string, err error) {
	var warns []string
	for _, n := range a.nodes {
		if nd := n.plugin.Plugin().Name; nd != driver {
			return "", fmt.Errorf("csi: the controller socket serves driver %q but %s's node socket serves %q: give both plugins of one driver", driver, n.name, nd)
		}
		if old, ok := was[n.name]; ok && old != n.id {
			warns = append(warns, fmt.Sprintf("csi: node %s's plugin reports node ID %q, was %q: the machine was replaced; volumes still published to %q stay so until unpublished (ControllerUnpublishVolume with that node ID)", n.name, n.id, old, old))
		}
	}
	return strings.Join(warns, "; "), nil
}

// describeNodes says, for tether up, which node is which node ID and
// each one's limit.
func (a *csiAccount) describeNodes() string {
	var parts []string
	for _, n := range a.nodes {
		limit := "no volume limit"
		if m := n.plugin.MaxVolumes(); m > 0 {
			limit = fmt.Sprintf("at most %d volumes", m)
		}
		parts = append(parts, fmt.Sprintf("node %s is its node ID %s, %s", n.name, n.id, limit))
	}
	return strings.Join(parts, "; ")
}

// closeNodes closes every node plugin's connection.
func (a *csiAccount) closeNodes() error {
	var errs []error
	for _, n := range a.nodes {
		errs = append(errs, n.plugin.Close())
	}
	return errors.Join(errs...)
}

// csiNodeInfo is what the account knows of a node: its name, its
// plugin's node ID and max_volumes_per_node.
type csiNodeInfo struct {
	name cloud.NodeName
	id   cloud.InstanceID
	max  int64
}

// infoNamed is node's info: from its dialed plugin, or, for a controller
// whose nodes are on other machines (remote), from the node status its
// agent's reports filled (ok false: none reported yet).
func (a *csiAccount) infoNamed(node cloud.NodeName) (csiNodeInfo, bool) {
	if !a.remote {
		if n := a.nodeNamed(node); n != nil {
			return csiNodeInfo{name: n.name, id: n.id, max: n.plugin.MaxVolumes()}, true
		}
		return csiNodeInfo{}, false
	}
	ref := a.store.Load()
	if ref == nil {
		return csiNodeInfo{}, false
	}
	st, ok, err := ref.NodeStatus(node)
	if err != nil || !ok || st.InstanceID == "" {
		return csiNodeInfo{name: node}, false
	}
	return csiNodeInfo{name: node, id: st.InstanceID, max: st.MaxVolumes}, true
}

// infoOf is the info of the node whose plugin has node ID inst.
func (a *csiAccount) infoOf(inst cloud.InstanceID) (csiNodeInfo, bool) {
	if !a.remote {
		if n := a.nodeOf(inst); n != nil {
			return csiNodeInfo{name: n.name, id: n.id, max: n.plugin.MaxVolumes()}, true
		}
		return csiNodeInfo{}, false
	}
	node, ok := a.p.NodeOf(inst)
	if !ok {
		return csiNodeInfo{}, false
	}
	info, ok := a.infoNamed(node)
	return info, ok && info.id == inst
}

// lookupNodeID is the Provider's node ID lookup of a remote account: the
// node status's.
func (a *csiAccount) lookupNodeID(_ context.Context, node cloud.NodeName) (cloud.InstanceID, bool, error) {
	ref := a.store.Load()
	if ref == nil {
		return "", false, errors.New("the store is not open yet")
	}
	st, ok, err := ref.NodeStatus(node)
	if err != nil || !ok {
		return "", false, err
	}
	return st.InstanceID, st.InstanceID != "", nil
}
