package csi

import (
	"context"
	"fmt"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/tether/tether/cloud"
)

// DefaultBatchSize is BatchSize when no WithBatchSize is given.
const DefaultBatchSize = 100

// Option configures Dial.
type Option func(*config)

type config struct {
	batch      int
	fsType     string
	access     func(context.Context, cloud.VolumeID) (Access, error)
	nodeIDs    map[cloud.NodeName]cloud.InstanceID
	lookup     NodeIDLookup
	probeEvery time.Duration
}

// WithBatchSize sets BatchSize (values below 1 are ignored).
func WithBatchSize(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.batch = n
		}
	}
}

// WithFsType sets the file system of the mount capability (Capability);
// the node side must use the same.
func WithFsType(fsType string) Option { return func(c *config) { c.fsType = fsType } }

// WithAccessModes tells Attach and Detach how each volume is used
// (tether's store knows: its access mode and whether it is ReadOnlyMany,
// block or mounted, its volume_context; the wiring reads its secrets
// when asked). Without it every volume is cloud.Exclusive, mounted with
// the configured file system. An error from it fails the Attach,
// retryably, with nothing sent; a Detach is sent without secrets then
// (see Detach).
func WithAccessModes(access func(context.Context, cloud.VolumeID) (Access, error)) Option {
	return func(c *config) { c.access = access }
}

// WithNodeIDs seeds the node registry (see SetNodeID), e.g. from static
// configuration.
func WithNodeIDs(ids map[cloud.NodeName]cloud.InstanceID) Option {
	return func(c *config) {
		for n, id := range ids {
			c.nodeIDs[n] = id
		}
	}
}

// WithProbeInterval sets how often Dial asks a driver that is not ready
// yet (DefaultProbeInterval).
func WithProbeInterval(d time.Duration) Option { return func(c *config) { c.probeEvery = d } }

// Verification is how a Provider learns which volumes are published where.
type Verification int

const (
	// ByList: one ListVolumes paging loop per call, reading each volume's
	// published_node_ids (LIST_VOLUMES and LIST_VOLUMES_PUBLISHED_NODES).
	ByList Verification = iota + 1
	// ByRecord: the driver cannot say what is published where (no
	// LIST_VOLUMES_PUBLISHED_NODES; a ControllerGetVolume's
	// published_node_ids is then not to be interpreted, says the spec):
	// tether's own records are the truth (cloud.ListingNone).
	ByRecord
)

func (v Verification) String() string {
	switch v {
	case ByList:
		return "list-volumes"
	case ByRecord:
		return "tether's records"
	}
	return fmt.Sprintf("Verification(%d)", int(v))
}

// Dial connects to the CSI controller plugin listening on the unix socket
// at socket (see Connect: it waits within ctx for the driver to be ready)
// and checks that it can serve tether: the plugin offers
// CONTROLLER_SERVICE and its controller PUBLISH_UNPUBLISH_VOLUME.
// Anything missing is a clear error, and the connection is closed. How
// attachments are verified follows from its capabilities (Verification):
// by ListVolumes where it offers LIST_VOLUMES with
// LIST_VOLUMES_PUBLISHED_NODES, else not at all (ByRecord). Whether it
// offers PUBLISH_READONLY is noted (Attach).
func Dial(ctx context.Context, socket string, opts ...Option) (*Provider, error) {
	cfg := config{batch: DefaultBatchSize, fsType: DefaultFsType, nodeIDs: map[cloud.NodeName]cloud.InstanceID{}}
	for _, o := range opts {
		o(&cfg)
	}
	owner := map[cloud.InstanceID]cloud.NodeName{}
	for n, id := range cfg.nodeIDs {
		if other, dup := owner[id]; dup || id == "" {
			return nil, fmt.Errorf("csi: node IDs: node %s has ID %q, which is empty or node %s's: %w", n, id, other, cloud.ErrTerminal)
		}
		owner[id] = n
	}
	conn, plugin, err := Connect(ctx, socket, cfg.probeEvery)
	if err != nil {
		return nil, err
	}
	p, err := newProvider(ctx, conn, plugin, cfg)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("csi: driver %q at %s: %w", plugin.Name, socket, err)
	}
	return p, nil
}

func newProvider(ctx context.Context, conn *grpc.ClientConn, plugin Plugin, cfg config) (*Provider, error) {
	if !plugin.Controller {
		return nil, fmt.Errorf("it offers no CONTROLLER_SERVICE: it cannot publish volumes to nodes, so tether has nothing to attach with (give this socket to the node agent instead)")
	}
	ctl := spec.NewControllerClient(conn)
	r, err := ctl.ControllerGetCapabilities(ctx, &spec.ControllerGetCapabilitiesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return nil, MapError("ControllerGetCapabilities", err)
	}
	has := map[spec.ControllerServiceCapability_RPC_Type]bool{}
	for _, c := range r.GetCapabilities() {
		has[c.GetRpc().GetType()] = true
	}
	if !has[spec.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME] {
		return nil, fmt.Errorf("its controller lacks PUBLISH_UNPUBLISH_VOLUME: it has no attach step (a node-only driver needs no tether controller)")
	}
	v := ByRecord
	if has[spec.ControllerServiceCapability_RPC_LIST_VOLUMES] && has[spec.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES] {
		v = ByList
	}
	return &Provider{
		cfg: cfg, conn: conn, ctl: ctl, plugin: plugin, verify: v,
		publishReadOnly: has[spec.ControllerServiceCapability_RPC_PUBLISH_READONLY],
		nodes:           cfg.nodeIDs,
		devices:         map[cloud.VolumeID]map[cloud.InstanceID]string{},
	}, nil
}
