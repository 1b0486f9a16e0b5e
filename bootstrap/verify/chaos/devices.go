package chaos

import (
	"context"
	"path/filepath"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/agent"
)

// Wire makes ec's agents (their mounts, devices, and what they receive
// and act on), and store record into c.
func (c *Checker) Wire(ec *process.Config) {
	ec.WrapMounter, ec.WrapStore, ec.WrapDevices = c.WrapMounter, c.WrapStore, c.WrapDevices
	c.WireAgents(&ec.Agent)
}

// WrapDevices records each device resolution of node n that succeeded,
// when it returned: the judge then knows whether the volume was attached
// there at that stamp, so that a stage whose volume the cloud took away
// between the resolution and the mount call is told apart from a stage on
// a device path nobody checked.
func (c *Checker) WrapDevices(n cloud.NodeName, d agent.Devices) agent.Devices {
	return recDevices{Devices: d, c: c, node: n}
}

type recDevices struct {
	agent.Devices
	c    *Checker
	node cloud.NodeName
}

func (d recDevices) Source(ctx context.Context, vol cloud.VolumeID, device string) (string, func(), error) {
	src, release, err := d.Devices.Source(ctx, vol, device)
	if err == nil {
		d.c.add(record{kind: recDevice, vol: vol, node: d.node, text: device})
	}
	return src, release, err
}

// trustingDevices breaks I3 in the wiring (Break "I3-device"): it resolves
// any device path to the volume's disk, attached or not, as an agent shell
// that trusted the paths in a stale node status would.
type trustingDevices struct {
	content string // the sim cloud's content directory
}

func (d trustingDevices) Source(_ context.Context, vol cloud.VolumeID, _ string) (string, func(), error) {
	return filepath.Join(d.content, string(vol)), func() {}, nil
}
