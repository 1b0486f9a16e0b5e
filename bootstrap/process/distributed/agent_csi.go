package distributed

import (
	"cmp"
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/tether/tether/bootstrap/process"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/node/agent"
	nodecsi "github.com/tether/tether/node/csinode"
	"github.com/tether/tether/node/layout"
)

// useCSI dials this machine's CSI node plugin and makes it the agent's
// mounter (node/csinode.Mounter, under process.CSIPlugin) and device
// resolution (the publish context as it came in the node status); the
// agent's heartbeats carry the plugin's node ID and limit to the
// controller, which records them in the node status.
func (a *AgentProcess) useCSI(cfg AgentConfig, ac *agent.Config, l layout.Layout) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(cfg.CSIWait, process.DefaultCSIDialTimeout))
	defer cancel()
	var err error
	if a.CSI, err = nodecsi.DialNode(ctx, cfg.CSINodeSocket); err != nil {
		return fmt.Errorf("agent: csi node plugin at %s: %w", cfg.CSINodeSocket, err)
	}
	// How a volume is used comes with its device path (the controller's
	// publication: cloud/csi.DevicePathFor); its secrets, by name, from
	// this node's own data directory.
	m, err := nodecsi.NewMounter(a.CSI, l, nodecsi.MounterConfig{Plugin: process.CSIPlugin, Timeout: ac.OpTimeout,
		Secrets: func(ref string) (cloudcsi.Secrets, error) { return process.ReadCSISecrets(cfg.DataDir, ref) }})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	ac.Plugin, ac.Mounter, ac.Devices = process.CSIPlugin, m, nodecsi.Devices{}
	ac.InstanceID, ac.MaxVolumes = a.CSI.ID(), a.CSI.MaxVolumes()
	a.Log.WithFields(logrus.Fields{"driver": a.CSI.Plugin().Name, "node_id": a.CSI.ID(), "max_volumes": a.CSI.MaxVolumes()}).Info("csi node plugin ready")
	return nil
}
