// Command csifake serves csitest's fake CSI driver on two unix sockets,
// its controller plugin and one node plugin, to run tether up against by
// hand:
//
//	go run ./cloud/csi/csitest/csifake --dir /tmp/csi --volumes data-1,data-2 &
//	go run ./cmd/tether up --csi-controller-socket /tmp/csi/controller.sock --csi-node-socket /tmp/csi/node.sock
//
// With --node-id a,b,c it serves a node plugin per node ID, on a.sock,
// b.sock and c.sock (several machines' node plugins on one, for tether up
// with --csi-node-socket given once per node, or distributed mode's
// agents, one socket each).
//
// It prints the driver's state every --every (and at exit, with every
// call it received) until SIGINT or SIGTERM. It is a test tool: the fake
// mounts nothing and forgets everything when it exits. By default the
// driver lists what is published (LIST_VOLUMES_PUBLISHED_NODES); --loose
// serves the shape tether demo --csi runs on instead: GET_VOLUME, and
// published_node_ids filled loosely without that capability.
package main
