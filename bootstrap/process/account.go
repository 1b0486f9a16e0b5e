package process

// The cloud an embedded tether runs on, seen through one interface
// (Account) whichever it is: the in-memory sim (the default) or the loop
// cloud, whose disks are image files attached as real loop devices
// (account_loop.go).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
)

// Kinds of cloud (Config.Cloud).
const (
	CloudSim  = "sim"
	CloudLoop = "loop"
	// CloudCSI is a CSI driver (Config.CSI): account_csi.go.
	CloudCSI = "csi"
)

// LoopPlugin is the volume plugin in the node agents' layout with the loop
// cloud (<node>/plugins/tether-loop/mounts/<volume>); the sim's is
// node.DefaultConfig's.
const LoopPlugin = "tether-loop"

// Account is what the embedded runtime asks of its cloud, whichever it
// is: the provider the controller calls, the administration of instances
// and disks the API needs (cloud.Provisioner), instances for the nodes at start,
// how a node agent checks a device path before mounting it, and the owner
// tag and inventory the start-up checks and --rebuild-store read
// (identity.go, rebuild.go). Attachments, CreateVolume and CallCounts
// serve the demo and the tests.
type Account interface {
	cloud.Provider
	cloud.Provisioner
	owner
	// AddInstances backs each node with a running instance; a node that
	// has one keeps it.
	AddInstances(nodes []cloud.NodeName) error
	// CreateVolume creates a detached disk, committed (not tagged
	// uncommitted: see cloud.Provisioner); an existing one is left as it is.
	CreateVolume(id cloud.VolumeID, mode cloud.AccessMode) error
	// Attachments is the cloud's ground truth: the instances each
	// attached volume is attached to.
	Attachments() map[cloud.VolumeID][]cloud.InstanceID
	// Devices is how node n's agent turns a device path into what it
	// mounts, checked against the cloud first.
	Devices(n cloud.NodeName) agent.Devices
	// CallCounts counts the provider calls the cloud received.
	CallCounts() CallCounts
	// Close lets go of the cloud's state (attachments stay).
	Close() error
}

// owner is what the start-up checks read and write of the cloud account
// (identity.go): its owner tag and everything it holds, as an operator
// reads them in a cloud's console.
type owner interface {
	Tag() string
	SetTag(tag string) error
	Inventory() sim.Inventory
}

// CallCounts counts provider calls by kind; Verify counts both batched
// queries (VolumesAreAttached, InstanceVolumes).
type CallCounts struct {
	Attach, Detach, Verify int
}

// Map is c as the demo reports it.
func (c CallCounts) Map() map[string]int {
	return map[string]int{"attach": c.Attach, "detach": c.Detach, "verify": c.Verify}
}

// cloudKind checks Config.Cloud ("" is the sim).
func cloudKind(kind string) (string, error) {
	switch kind {
	case "", CloudSim:
		return CloudSim, nil
	case CloudLoop, CloudCSI:
		return kind, nil
	}
	return "", fmt.Errorf("embedded: unknown cloud %q: want %s, %s or %s", kind, CloudSim, CloudLoop, CloudCSI)
}

// simAccount is the sim cloud as an Account.
type simAccount struct{ *sim.Cloud }

var _ Account = simAccount{}

func (s simAccount) AddInstances(nodes []cloud.NodeName) error {
	_, err := s.Cloud.AddInstances(nodes)
	return err
}

func (s simAccount) CreateVolume(id cloud.VolumeID, mode cloud.AccessMode) error {
	return s.Cloud.CreateVolumeChecked(id, mode)
}

func (s simAccount) Devices(n cloud.NodeName) agent.Devices {
	return agent.SimDevices{Cloud: s.Cloud, Node: n, Virtual: s.Cloud.VirtualContent()}
}

func (s simAccount) CallCounts() CallCounts {
	c := s.Cloud.Calls()
	return CallCounts{
		Attach: c.Calls[sim.MethodAttach],
		Detach: c.Calls[sim.MethodDetach],
		Verify: c.Calls[sim.MethodInstanceVolumes] + c.Calls[sim.MethodVolumesAreAttached],
	}
}

// simStateFile is the durable sim cloud's state under the data directory
// (with its log, simStateFile + ".log").
const simStateFile = "cloud-state.json"

// cloudMarks are the files that show which cloud a data directory ran
// with, and how tether up is told to run it.
var cloudMarks = []struct{ kind, file, what, flag string }{
	{CloudSim, simStateFile, "the sim cloud's state", "--cloud sim"},
	{CloudLoop, filepath.Join(LoopDir, "state.json"), "the loop cloud's state", "--cloud loop"},
	{CloudCSI, CSIAccountFile, "tether's record of a CSI driver", "--csi-controller-socket and --csi-node-socket"},
}

// checkCloudKind refuses to start a durable tether on a data directory
// that holds another cloud's state: its store names disks and
// attachments that this cloud does not have.
func checkCloudKind(dataDir, kind string) error {
	flag := ""
	for _, m := range cloudMarks {
		if m.kind == kind {
			flag = m.flag
		}
	}
	for _, m := range cloudMarks {
		if m.kind == kind {
			continue
		}
		other := filepath.Join(dataDir, m.file)
		if _, err := os.Lstat(other); err == nil {
			return fmt.Errorf("%w: %s holds %s: this data directory was run with %s; start it with %s, or use another --data-dir for %s",
				ErrUntrusted, other, m.what, m.flag, m.flag, flag)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("data directory %s: %w", dataDir, err)
		}
	}
	return nil
}

// ObserveSync registers f, called with every later attachment change of
// the cloud, synchronously and in order, as sim.Cloud.ObserveSync does
// (its rules hold: f must be quick and must not call the cloud). With the
// loop cloud these are the changes made through the Account (tether's
// attaches and detaches, Terminate, Replace, Delete and ConsoleDetach),
// each heard right after it was made, before the call that made it
// returns.
func (e *Embedded) ObserveSync(f func(sim.Change)) {
	switch a := e.Account.(type) {
	case simAccount:
		a.ObserveSync(f)
	case *loopAccount:
		a.ObserveSync(f)
	}
}
