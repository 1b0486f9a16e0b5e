// Command csifake serves csitest's fake CSI driver on unix sockets (its
// controller plugin, and a node plugin per --node-id) to run tether up
// against by hand:
//
//	go run ./cloud/csi/csitest/csifake --dir /tmp/csi --volumes data-1,data-2 &
//	go run ./cmd/tether up --csi-controller-socket /tmp/csi/controller.sock --csi-node-socket /tmp/csi/node.sock
//
// It prints the driver's state every --every, and at exit every call it
// received, until SIGINT or SIGTERM. A test tool: the fake mounts nothing
// and forgets everything when it exits.
//
// See docs/storage.md#any-csi-driver---csi-controller-socket---csi-node-socket
// for --node-id, --max-volumes and --loose.
package main
