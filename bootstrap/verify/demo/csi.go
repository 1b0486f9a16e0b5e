package demo

// The demo on CSI: csitest's fake driver, served in this process on unix
// sockets in a private temporary directory, in the shape of the widely
// used drivers that broke tether once (STAGE_UNSTAGE_VOLUME, GET_VOLUME,
// published_node_ids filled loosely WITHOUT LIST_VOLUMES_PUBLISHED_NODES,
// a node limit). The fake's state and its log of the calls it received
// are the ground truth the steps are checked against; tether never
// creates a CSI volume, so the scenario's volumes are made in the driver
// first, as an operator would with the driver's own tooling.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

const (
	// CSIDriverName is the fake driver's name (GetPluginInfo).
	CSIDriverName = "demo.csi.tether"
	// CSIMaxVolumes is each node plugin's max_volumes_per_node: room for
	// the scenario's volumes, no more than a small cloud instance has.
	CSIMaxVolumes = 8
)

// csiNodeIDs are the node IDs of the fake's node plugins, one per node,
// n1 first: several node plugins of one driver on one machine, each with
// its own node ID. The placement and the checks follow e.NodeNames.
var csiNodeIDs = []string{"demo-node-1", "demo-node-2"}

// fakeDriver is the fake CSI driver served for the demo.
type fakeDriver struct {
	d          *csitest.Driver
	dir        string // private: the sockets, removed by stop
	controller string // the controller plugin's socket
	nodes      []string
	sockets    []string // node plugin socket of each of nodes
	stops      []func()
}

// startFakeDriver serves a fake driver with the volumes vols: its
// controller plugin and a node plugin per node ID, each on its own
// socket. On error nothing is left running or on disk.
func startFakeDriver(vols []cloud.VolumeID) (f *fakeDriver, err error) {
	limits := map[string]int64{}
	for _, id := range csiNodeIDs {
		limits[id] = CSIMaxVolumes
	}
	f = &fakeDriver{d: csitest.New(csitest.Config{
		Name: CSIDriverName, Nodes: limits, EnforceNodeLimit: true,
		StageUnstage: true, GetVolume: true, LoosePublishedNodes: true,
	}), nodes: slices.Clone(csiNodeIDs)}
	for _, v := range vols {
		f.d.AddVolume(string(v))
	}
	// Not under the data directory: a socket path is limited to about
	// 108 bytes, and a private directory keeps other users off them.
	if f.dir, err = os.MkdirTemp("", "tether-demo-csi-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.stop())
		}
	}()
	f.controller = filepath.Join(f.dir, "controller.sock")
	if err := f.listen(f.controller, ""); err != nil {
		return nil, err
	}
	for i, id := range f.nodes {
		socket := filepath.Join(f.dir, fmt.Sprintf("node-%d.sock", i+1))
		if err := f.listen(socket, id); err != nil {
			return nil, err
		}
		f.sockets = append(f.sockets, socket)
	}
	return f, nil
}

// listen serves the driver on socket: its node plugin of node ID id, or
// its controller plugin if id is "".
func (f *fakeDriver) listen(socket, id string) error {
	stop, err := f.d.Listen(socket, id)
	if err != nil {
		what := "controller plugin"
		if id != "" {
			what = "node plugin of " + id
		}
		return fmt.Errorf("demo: serving the fake CSI driver's %s on %s: %w", what, socket, err)
	}
	f.stops = append(f.stops, stop)
	return nil
}

// config is an embedded tether's cloud on the fake: one node per node
// plugin.
func (f *fakeDriver) config(cfg *process.Config) {
	cfg.Cloud, cfg.Nodes = process.CloudCSI, len(f.sockets)
	cfg.CSI = process.CSIConfig{ControllerSocket: f.controller, NodeSockets: slices.Clone(f.sockets), DialTimeout: 10 * time.Second}
}

// nodeIDs maps each of tether's nodes to its plugin's node ID, from the
// fake's side: tether runs node n<i+1> on the i-th node plugin socket.
func (f *fakeDriver) nodeIDs(names []cloud.NodeName) map[cloud.NodeName]string {
	out := map[cloud.NodeName]string{}
	for i, n := range names {
		if i < len(f.nodes) {
			out[n] = f.nodes[i]
		}
	}
	return out
}

// stop stops every server and removes the sockets and their directory.
// Call it after tether stopped (it holds connections to them).
func (f *fakeDriver) stop() error {
	for _, stop := range slices.Backward(f.stops) {
		stop()
	}
	f.stops = nil
	if f.dir == "" {
		return nil
	}
	return os.RemoveAll(f.dir)
}
