package chaos

// A run on a CSI driver (Config.Cloud process.CloudCSI): csitest's
// fake, served in this process on unix sockets (its controller plugin,
// and one node plugin per node, each with its own node ID), in the shape
// of the widely used drivers: STAGE_UNSTAGE_VOLUME, GET_VOLUME,
// published_node_ids filled loosely WITHOUT LIST_VOLUMES_PUBLISHED_NODES
// (so tether verifies nothing with it: its records are the truth), and
// permissive (MultiAttach: it accepts a second exclusive publish, so
// that I1 is tether's to keep). What differs from the sim: the driver's
// faults come from its hooks (csi_faults.go), its plugins restart, no
// machine goes down and nothing is detached from a console (a driver
// without a listing never shows tether such a loss: it could not heal,
// by design), and the timeline's attachments and mounts are the
// driver's own, heard as it applies each call (csi_timeline.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/cloud/csi/csitest"
	nodecsi "github.com/tether/tether/node/csinode"
)

// CSIDriverName is the fake driver's name in a run on CSI.
const CSIDriverName = "chaos.csi.tether"

// CSIBreaks are what Config.Break can break on CSI: the rules of Breaks
// that the driver can show ("I3-device" cannot: the agent's device on
// CSI is the publish context, the node plugin's to refuse), and
// "I3-attach": a stage sent to a node plugin before the volume is
// published there (csiRig.sabotage).
var CSIBreaks = []string{"I1", "I2", "I3", "I3-attach", "I4", "I5"}

// csiRig is the fake driver of a run and its servers.
type csiRig struct {
	d      *csitest.Observed
	dir    string            // private: the sockets, removed by close
	ctl    *csitest.Server   // the controller plugin
	nodes  []*csitest.Server // node n<i+1>'s plugin
	ids    []string          // node n<i+1>'s node ID
	names  map[string]cloud.NodeName
	faults *csiFaults
	calls  atomic.Int64 // mutating calls received

	mu        sync.Mutex
	saboteurs map[cloud.NodeName]*nodecsi.Node // Break "I3-attach"
}

// startCSI serves a fake driver for cfg's volumes and nodes, recording
// into chk. On error nothing is left serving or on disk.
func startCSI(cfg Config, chk *Checker) (r *csiRig, err error) {
	r = &csiRig{faults: newCSIFaults(cfg.Seed), names: map[string]cloud.NodeName{}, saboteurs: map[cloud.NodeName]*nodecsi.Node{}}
	modes := map[cloud.VolumeID]cloud.AccessMode{}
	for i := range cfg.Volumes {
		modes[volName(i)] = volMode(i)
	}
	limits := map[string]int64{}
	for i := range cfg.Nodes {
		id := fmt.Sprintf("csi-node-%d", i+1) // not the node's name: names are not IDs
		r.ids, r.names[id], limits[id] = append(r.ids, id), cloud.NodeName(fmt.Sprintf("n%d", i+1)), 0
	}
	observe := chk.csiObserver(r.names, modes)
	r.d = csitest.NewObserved(csitest.Config{Name: CSIDriverName, Nodes: limits,
		GetVolume: true, LoosePublishedNodes: true, StageUnstage: true, MultiAttach: true, Before: r.faults.before},
		csitest.Hooks{Observe: func(e csitest.Event) {
			if e.Phase == csitest.Received {
				r.calls.Add(1)
			}
			observe(e)
		}, Reply: r.faults.reply})
	for i := range cfg.Volumes {
		r.d.AddVolume(string(volName(i)))
	}
	// Not under the data directory: a socket path is limited to about
	// 108 bytes.
	if r.dir, err = os.MkdirTemp("", "tether-chaos-csi-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.close())
		}
	}()
	r.ctl = r.d.NewServer(filepath.Join(r.dir, "controller.sock"), "")
	for i, id := range r.ids {
		r.nodes = append(r.nodes, r.d.NewServer(filepath.Join(r.dir, fmt.Sprintf("n%d.sock", i+1)), id))
	}
	return r, r.serveAll()
}

// configure makes ec run on the driver: node n<i+1> on its node plugin,
// each mount call bounded by one cloud timeout (as the controller's
// calls), and the timeline's mounts the driver's (csiObserver), not the
// agents' mounter's: nothing wraps the mounter or the devices.
func (r *csiRig) configure(ec *process.Config) {
	ec.Cloud = process.CloudCSI
	ec.CSI = process.CSIConfig{ControllerSocket: r.ctl.Socket(), DialTimeout: 10 * time.Second}
	for _, s := range r.nodes {
		ec.CSI.NodeSockets = append(ec.CSI.NodeSockets, s.Socket())
	}
	ec.Agent.OpTimeout = cloudTimout
	ec.WrapMounter, ec.WrapDevices = nil, nil
}

// servers are the plugins an action restarts: Other%3 picks the
// controller plugin, node Node's plugin, or the whole driver.
func (r *csiRig) servers(a Action) (which string, ss []*csitest.Server) {
	switch a.Other % 3 {
	case 0:
		return "controller", []*csitest.Server{r.ctl}
	case 1:
		return "node", []*csitest.Server{r.nodes[a.Node%len(r.nodes)]}
	}
	return "all", append([]*csitest.Server{r.ctl}, r.nodes...)
}

// serveAll serves every plugin not serving.
func (r *csiRig) serveAll() error {
	var errs []error
	for _, s := range append([]*csitest.Server{r.ctl}, r.nodes...) {
		errs = append(errs, s.Start())
	}
	return errors.Join(errs...)
}

// close stops every plugin, closes the saboteurs' connections and removes
// the sockets' directory.
func (r *csiRig) close() error {
	if r == nil {
		return nil
	}
	var errs []error
	r.mu.Lock()
	for _, n := range r.saboteurs {
		errs = append(errs, n.Close())
	}
	clear(r.saboteurs)
	r.mu.Unlock()
	for _, s := range append([]*csitest.Server{r.ctl}, r.nodes...) {
		if s != nil {
			s.Stop()
		}
	}
	if r.dir != "" {
		errs = append(errs, os.RemoveAll(r.dir))
	}
	return errors.Join(errs...)
}

// sabotage breaks I3 behind tether's back (Break "I3-attach"): node n's
// plugin is asked to stage vol the moment a workload wants it there,
// before the controller could have published it to n, as an agent that
// did not wait for VolumesAttached would. The driver refuses it (not
// published: its second line of defence), but the checker judges the
// stage the node asked for. Its staging path is the rig's own, so that
// nothing of it reaches the agent's layout.
func (r *csiRig) sabotage(chk *Checker, n cloud.NodeName, vol cloud.VolumeID, mode cloud.AccessMode) {
	i := slices.Index(r.nodeNames(), n)
	if i < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.saboteurs[n]
	if p == nil {
		var err error
		if p, err = nodecsi.DialNode(ctx, r.nodes[i].Socket()); err != nil {
			return // the plugin restarts: the next workload tries again
		}
		r.saboteurs[n] = p
	}
	chk.Note(vol, "sabotage: %s's plugin asked to stage it before any publish", n)
	path := filepath.Join(r.dir, "sabotage", string(n), string(vol))
	device := cloudcsi.DevicePath(map[string]string{"sabotage": "no publish context"})
	_ = p.Stage(ctx, vol, device, path, cloudcsi.Access{Mode: mode}) // refused: the point is that it was asked
}

// nodeNames are the nodes, n1 first.
func (r *csiRig) nodeNames() []cloud.NodeName {
	out := make([]cloud.NodeName, len(r.ids))
	for i, id := range r.ids {
		out[i] = r.names[id]
	}
	return out
}

// driverAccount is the CSI account as the runner's account: a CSI driver
// has no instances to replace and, without a listing, no console detach
// tether could ever see (the CSI plan draws neither).
type driverAccount struct{ process.Account }

func (driverAccount) Replace(n cloud.NodeName) (cloud.InstanceID, error) {
	return "", fmt.Errorf("chaos: csi: no instance of %s to replace: a node is the machine its plugin runs on", n)
}

func (driverAccount) ConsoleDetach(vol cloud.VolumeID, _ cloud.InstanceID) error {
	return fmt.Errorf("chaos: csi: no console detach of %s: a driver without LIST_VOLUMES_PUBLISHED_NODES never shows it to tether", vol)
}
