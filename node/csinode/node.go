package csinode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
)

// Option configures DialNode.
type Option func(*config)

type config struct {
	fsType     string
	probeEvery time.Duration
}

// WithFsType sets the file system of the mount capability; it must be the
// controller's (cloud/csi.WithFsType).
func WithFsType(fsType string) Option { return func(c *config) { c.fsType = fsType } }

// WithProbeInterval sets how often DialNode asks a plugin that is not
// ready yet (cloud/csi.DefaultProbeInterval).
func WithProbeInterval(d time.Duration) Option { return func(c *config) { c.probeEvery = d } }

// Node is a connection to a CSI node plugin. It is safe for concurrent
// use (the plugin serialises what it must).
type Node struct {
	conn   *grpc.ClientConn
	rpc    spec.NodeClient
	plugin cloudcsi.Plugin
	id     cloud.InstanceID
	max    int64
	stages bool
	fsType string
	// probeEvery is the first wait of a retry at DialNode.
	probeEvery time.Duration
}

// DialNode connects to the node plugin on the unix socket at socket,
// waiting within ctx for it to be ready (cloud/csi.Connect), and reads its
// node ID, attach limit and capabilities (accessible topology is ignored).
func DialNode(ctx context.Context, socket string, opts ...Option) (*Node, error) {
	cfg := config{fsType: cloudcsi.DefaultFsType}
	for _, o := range opts {
		o(&cfg)
	}
	conn, plugin, err := cloudcsi.Connect(ctx, socket, cfg.probeEvery)
	if err != nil {
		return nil, err
	}
	n := &Node{conn: conn, rpc: spec.NewNodeClient(conn), plugin: plugin, fsType: cmp.Or(cfg.fsType, cloudcsi.DefaultFsType),
		probeEvery: cmp.Or(cfg.probeEvery, cloudcsi.DefaultProbeInterval)}
	if err := n.describe(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("csi: node plugin %q at %s: %w", plugin.Name, socket, err)
	}
	return n, nil
}

func (n *Node) describe(ctx context.Context) error {
	// A plugin not ready yet may fail these for a while: asked again
	// with backoff within ctx (cloudcsi.Retry).
	info, err := cloudcsi.Retry(ctx, "NodeGetInfo", n.probeEvery, func() (*spec.NodeGetInfoResponse, error) {
		return n.rpc.NodeGetInfo(ctx, &spec.NodeGetInfoRequest{}, grpc.WaitForReady(true))
	})
	if err != nil {
		return err
	}
	if info.GetNodeId() == "" {
		return fmt.Errorf("NodeGetInfo gave no node ID: %w", cloud.ErrTerminal)
	}
	if info.GetMaxVolumesPerNode() < 0 {
		return fmt.Errorf("NodeGetInfo gave max_volumes_per_node %d: %w", info.GetMaxVolumesPerNode(), cloud.ErrTerminal)
	}
	caps, err := cloudcsi.Retry(ctx, "NodeGetCapabilities", n.probeEvery, func() (*spec.NodeGetCapabilitiesResponse, error) {
		return n.rpc.NodeGetCapabilities(ctx, &spec.NodeGetCapabilitiesRequest{}, grpc.WaitForReady(true))
	})
	if err != nil {
		return err
	}
	for _, c := range caps.GetCapabilities() {
		if c.GetRpc().GetType() == spec.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
			n.stages = true
		}
	}
	n.id, n.max = cloud.InstanceID(info.GetNodeId()), info.GetMaxVolumesPerNode()
	return nil
}

// Close closes the connection.
func (n *Node) Close() error { return n.conn.Close() }

// ID is the plugin's node ID: the instance the controller publishes this
// node's volumes to.
func (n *Node) ID() cloud.InstanceID { return n.id }

// MaxVolumes is the plugin's max_volumes_per_node; 0: it states none.
func (n *Node) MaxVolumes() int64 { return n.max }

// StagesVolumes reports STAGE_UNSTAGE_VOLUME. Without it Stage and
// Unstage do nothing and Publish sends no staging path.
func (n *Node) StagesVolumes() bool { return n.stages }

// Plugin is what the plugin said about itself at DialNode.
func (n *Node) Plugin() cloudcsi.Plugin { return n.plugin }

// do runs one call op: nothing is sent if ctx is done; a failure is
// classified, or wraps ctx's error if ctx ended meanwhile.
func do(ctx context.Context, op string, send func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("csi: %s: not sent: %w", op, err)
	}
	err := send(ctx)
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("csi: %s: %w (%v)", op, cerr, cloudcsi.MapError(op, err))
	}
	return cloudcsi.MapError(op, err)
}

// notFoundIsDone turns NOT_FOUND into success (idempotent teardown).
func notFoundIsDone(err error) error {
	if errors.Is(err, cloud.ErrNotFound) {
		return nil
	}
	return err
}

// mkdir creates dir and its parents (0750), as the spec asks of the CO.
func mkdir(op, dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("csi: %s: creating %s: %v: %w", op, dir, err, cloud.ErrRetryable)
	}
	return nil
}

// removeDir removes the directory path if it is there.
func removeDir(op, path string) error { return removeTarget(op, path) }

// removeTarget removes path if it is there: an empty directory or a
// file (os.Remove: never a directory with something in it, nor a mount
// point, which fails with EBUSY).
func removeTarget(op, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("csi: %s: removing %s: %v: %w", op, path, err, cloud.ErrRetryable)
	}
	return nil
}

// parent is the directory that holds path.
func parent(path string) string { return filepath.Dir(filepath.Clean(path)) }
