package csi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/tether/tether/cloud"
)

// Provider is a cloud.Provider over a CSI controller plugin. It is safe
// for concurrent use. Its only state is the node registry (which the
// wiring must seed at start, see docs/storage.md#nodes-and-instances)
// and the device paths of the attaches it made (lost with it: tether then
// keeps the paths it recorded).
type Provider struct {
	cfg    config
	conn   *grpc.ClientConn
	ctl    spec.ControllerClient
	plugin Plugin
	verify Verification
	// publishReadOnly: the controller offers PUBLISH_READONLY, without
	// which the spec has ControllerPublishVolume's readonly false.
	publishReadOnly bool

	mu      sync.Mutex
	nodes   map[cloud.NodeName]cloud.InstanceID
	devices map[cloud.VolumeID]map[cloud.InstanceID]string // from Attach, until Detach
}

var _ cloud.Provider = (*Provider)(nil)

// Close closes the connection; calls in flight fail with an unknown
// outcome.
func (p *Provider) Close() error { return p.conn.Close() }

// Plugin is what the driver said about itself at Dial.
func (p *Provider) Plugin() Plugin { return p.plugin }

// Verification is how VolumesAreAttached and InstanceVolumes ask the
// driver, chosen at Dial from its capabilities.
func (p *Provider) Verification() Verification { return p.verify }

// BatchSize implements cloud.Provider (WithBatchSize, DefaultBatchSize).
func (p *Provider) BatchSize() int { return p.cfg.batch }

// SetNodeID records that node's node plugin reports id (NodeGetInfo's
// node_id): from now on InstanceID(node) is id. A node whose plugin
// reports a new ID (the node was replaced) simply gets it: its old ID no
// longer names a live instance (InstanceVolumes leaves it out). Two nodes
// never share an ID: naming another node's ID fails until that node is
// forgotten (ForgetNode) or moves to another ID.
func (p *Provider) SetNodeID(node cloud.NodeName, id cloud.InstanceID) error {
	if id == "" {
		return fmt.Errorf("csi: node %s: empty node ID: %w", node, cloud.ErrTerminal)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, other := range p.nodes {
		if other == id && n != node {
			return fmt.Errorf("csi: node %s: node ID %q is node %s's: %w", node, id, n, cloud.ErrTerminal)
		}
	}
	p.nodes[node] = id
	return nil
}

// ForgetNode removes node from the registry (the node was deleted).
func (p *Provider) ForgetNode(node cloud.NodeName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.nodes, node)
}

// InstanceID implements cloud.Provider: the node ID registered for node
// (SetNodeID, WithNodeIDs), or, with WithNodeIDLookup, the one the lookup
// finds now (registered on the way); ErrNotFound if none is. It asks no
// driver.
func (p *Provider) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	if p.cfg.lookup != nil {
		return p.lookupNodeID(ctx, node)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.nodes[node]; ok {
		return id, nil
	}
	return "", fmt.Errorf("csi: node %s has reported no CSI node ID: %w", node, cloud.ErrNotFound)
}

// live reports which of insts some registered node currently has.
func (p *Provider) live(insts []cloud.InstanceID) map[cloud.InstanceID]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	known := make(map[cloud.InstanceID]bool, len(p.nodes))
	for _, id := range p.nodes {
		known[id] = true
	}
	out := map[cloud.InstanceID]bool{}
	for _, id := range insts {
		if known[id] {
			out[id] = true
		}
	}
	return out
}

// Attach implements cloud.Provider: ControllerPublishVolume of vol to the
// node inst with the volume's capability (WithAccessModes, Capability),
// volume_context and secrets, read-only for a ReadOnlyMany volume (if
// the driver offers PUBLISH_READONLY: the spec has the CO send false
// otherwise, and the MULTI_NODE_READER_ONLY capability still says it),
// else read-write. The device path encodes the publish context
// (DevicePath).
func (p *Provider) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	op := fmt.Sprintf("ControllerPublishVolume %s to %s", vol, inst)
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("csi: %s: not sent: %w", op, err)
	}
	a := Access{Mode: cloud.Exclusive}
	if p.cfg.access != nil {
		got, err := p.cfg.access(ctx, vol)
		if err != nil {
			// Nothing was sent: not a context error, whatever err is.
			return "", fmt.Errorf("csi: %s: reading how the volume is used, nothing sent: %v: %w", op, err, cloud.ErrRetryable)
		}
		a = got
	}
	req := &spec.ControllerPublishVolumeRequest{VolumeId: string(vol), NodeId: string(inst),
		VolumeCapability: Capability(a, p.cfg.fsType), Readonly: a.ReadOnlyMany() && p.publishReadOnly,
		VolumeContext: a.VolumeContext, Secrets: a.Secrets}
	r, err := call(ctx, op, true, func(c context.Context) (*spec.ControllerPublishVolumeResponse, error) {
		return p.ctl.ControllerPublishVolume(c, req)
	})
	if err != nil {
		return "", err
	}
	dev := DevicePathFor(r.GetPublishContext(), a)
	p.mu.Lock()
	if p.devices[vol] == nil {
		p.devices[vol] = map[cloud.InstanceID]string{}
	}
	p.devices[vol][inst] = dev
	p.mu.Unlock()
	return dev, nil
}

// Detach implements cloud.Provider: ControllerUnpublishVolume of vol from
// the node inst, with the volume's secrets (WithAccessModes). NOT_FOUND
// (no such volume or node: nothing published) is success.
//
// A detach is never held back by the secrets: if reading them fails (a
// secrets file gone or of a bad mode), the call is sent without them,
// since a driver may not need them to unpublish, and a detach that waits
// keeps the volume from every other node. If the driver then refuses,
// the error says why the secrets were missing too.
func (p *Provider) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	op := fmt.Sprintf("ControllerUnpublishVolume %s from %s", vol, inst)
	req := &spec.ControllerUnpublishVolumeRequest{VolumeId: string(vol), NodeId: string(inst)}
	var unread error
	if p.cfg.access != nil && ctx.Err() == nil {
		if a, err := p.cfg.access(ctx, vol); err != nil {
			unread = err
		} else {
			req.Secrets = a.Secrets
		}
	}
	_, err := call(ctx, op, true, func(c context.Context) (*spec.ControllerUnpublishVolumeResponse, error) {
		return p.ctl.ControllerUnpublishVolume(c, req)
	})
	if err != nil && !errors.Is(err, cloud.ErrNotFound) {
		if unread != nil {
			return fmt.Errorf("%w (sent without the volume's secrets: reading them failed: %v)", err, unread)
		}
		return err
	}
	p.mu.Lock()
	delete(p.devices[vol], inst)
	if len(p.devices[vol]) == 0 {
		delete(p.devices, vol)
	}
	p.mu.Unlock()
	return nil
}

// device is the device path of the last Attach of vol to inst, "" if
// this Provider made none since (a restart, another controller): "" is
// "unknown" to tether, which keeps the one it recorded.
func (p *Provider) device(vol cloud.VolumeID, inst cloud.InstanceID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.devices[vol][inst]
}

// Published lists the volumes this Provider published to inst and has
// not unpublished since (lost with the Provider: a wiring that counts a
// node's volumes adds its durable records).
func (p *Provider) Published(inst cloud.InstanceID) []cloud.VolumeID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []cloud.VolumeID
	for v, m := range p.devices {
		if _, ok := m[inst]; ok {
			out = append(out, v)
		}
	}
	return out
}
