package csitest

import (
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// plugin is a CO's view of one socket Serve serves: the controller, and
// the node plugin of node, over gRPC as the spec's clients speak it.
type plugin struct {
	node string
	id   spec.IdentityClient
	ctl  spec.ControllerClient
	nd   spec.NodeClient
}

// serve serves d with the node plugin of node and dials it; server and
// connection go in t.Cleanup.
func serve(t *testing.T, d *Driver, node string) plugin {
	t.Helper()
	socket := d.Serve(t, node)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return plugin{node: node, id: spec.NewIdentityClient(conn), ctl: spec.NewControllerClient(conn), nd: spec.NewNodeClient(conn)}
}

// use is how a request uses its volume: capability, volume_context and
// secrets.
type use struct {
	cap     *spec.VolumeCapability
	vctx    map[string]string
	secrets map[string]string
}

// mount is a single-node-writer capability of access type Mount.
func mount(fsType string, flags ...string) *spec.VolumeCapability {
	return &spec.VolumeCapability{
		AccessType: &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{FsType: fsType, MountFlags: flags}},
		AccessMode: &spec.VolumeCapability_AccessMode{Mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// block is a single-node-writer capability of access type Block.
func block() *spec.VolumeCapability {
	return &spec.VolumeCapability{
		AccessType: &spec.VolumeCapability_Block{Block: &spec.VolumeCapability_BlockVolume{}},
		AccessMode: &spec.VolumeCapability_AccessMode{Mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// publish is ControllerPublishVolume of vol to p's node; it returns the
// publish context.
func (p plugin) publish(t *testing.T, vol string, u use) (map[string]string, error) {
	r, err := p.ctl.ControllerPublishVolume(t.Context(), &spec.ControllerPublishVolumeRequest{
		VolumeId: vol, NodeId: p.node, VolumeCapability: u.cap, VolumeContext: u.vctx, Secrets: u.secrets})
	return r.GetPublishContext(), err
}

func (p plugin) unpublish(t *testing.T, vol string, u use) error {
	_, err := p.ctl.ControllerUnpublishVolume(t.Context(), &spec.ControllerUnpublishVolumeRequest{
		VolumeId: vol, NodeId: p.node, Secrets: u.secrets})
	return err
}

func (p plugin) stage(t *testing.T, vol, staging string, pc map[string]string, u use) error {
	_, err := p.nd.NodeStageVolume(t.Context(), &spec.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
		PublishContext: pc, VolumeCapability: u.cap, VolumeContext: u.vctx, Secrets: u.secrets})
	return err
}

func (p plugin) nodePublish(t *testing.T, vol, staging, target string, pc map[string]string, u use) error {
	_, err := p.nd.NodePublishVolume(t.Context(), &spec.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
		TargetPath: target, PublishContext: pc, VolumeCapability: u.cap, VolumeContext: u.vctx, Secrets: u.secrets})
	return err
}

func (p plugin) nodeUnpublish(t *testing.T, vol, target string) error {
	_, err := p.nd.NodeUnpublishVolume(t.Context(), &spec.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target})
	return err
}

// attach publishes vol to p's node and on it (target under dir), with
// no staging; it returns the target.
func (p plugin) attach(t *testing.T, vol, dir string) string {
	t.Helper()
	pc, err := p.publish(t, vol, use{cap: mount("ext4")})
	if err != nil {
		t.Fatalf("ControllerPublishVolume(%s, %s): %v", vol, p.node, err)
	}
	target := dir + "/" + p.node + "-" + vol
	if err := p.nodePublish(t, vol, "", target, pc, use{cap: mount("ext4")}); err != nil {
		t.Fatalf("NodePublishVolume(%s) on %s: %v", vol, p.node, err)
	}
	return target
}

// detach undoes attach.
func (p plugin) detach(t *testing.T, vol, target string) {
	t.Helper()
	if err := p.nodeUnpublish(t, vol, target); err != nil {
		t.Fatalf("NodeUnpublishVolume(%s) on %s: %v", vol, p.node, err)
	}
	if err := p.unpublish(t, vol, use{}); err != nil {
		t.Fatalf("ControllerUnpublishVolume(%s, %s): %v", vol, p.node, err)
	}
}

// wantCode fails t unless err's code is want.
func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: %v (%v), want %v", what, err, got, want)
	}
}
