package process

import (
	"context"
	"fmt"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
)

// CSIController is a CSI driver's controller plugin as a distributed
// mode controller member uses it: the cloud.Provider its controller calls
// (each call counted; an attach held to the node's max_volumes_per_node,
// counted from tether's records), the cloud.Provisioner of its API, and the
// driver's Listing. Its nodes run on other machines: each node's agent
// dials the node plugin there and reports the plugin's node ID and limit
// with its heartbeats, the node actor records them in the node status,
// and the Provider reads them there (cloud/csi.WithNodeIDLookup), so
// every member resolves every node, and a restarted member at once.
type CSIController struct{ *csiAccount }

// OpenCSIController dials the controller plugin on socket, waiting up to
// wait (0: DefaultCSIDialTimeout) for it to be ready, over st; volumes'
// secrets are read from dataDir's CSISecretsDir ("": a volume with
// secrets fails, saying so).
func OpenCSIController(socket string, wait time.Duration, st store.Store, dataDir string) (*CSIController, error) {
	a := &csiAccount{remote: true, dataDir: dataDir, inflight: map[cloud.InstanceID]map[cloud.VolumeID]int{}}
	a.useStore(st)
	ctx, cancel := context.WithTimeout(context.Background(), cmpDuration(wait, DefaultCSIDialTimeout))
	defer cancel()
	var err error
	if a.p, err = cloudcsi.Dial(ctx, socket, cloudcsi.WithNodeIDLookup(a.lookupNodeID), cloudcsi.WithAccessModes(a.accessOf)); err != nil {
		return nil, fmt.Errorf("csi controller plugin at %s: %w", socket, err)
	}
	return &CSIController{a}, nil
}

// Describe says in a line which driver this is and how its attachments
// are verified.
func (c *CSIController) Describe() string {
	return fmt.Sprintf("csi: driver %s; attachments: %s; nodes: each agent reports its node plugin's node ID", c.p.Plugin().Name, verifyMode(c.p.Listing()))
}
