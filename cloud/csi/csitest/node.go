package csitest

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// node is the Node service of one node ID.
type node struct {
	spec.UnimplementedNodeServer
	d  *Driver
	id string
}

func (s node) NodeGetInfo(ctx context.Context, _ *spec.NodeGetInfoRequest) (*spec.NodeGetInfoResponse, error) {
	if err := s.d.before(ctx, "NodeGetInfo"); err != nil {
		return nil, err
	}
	return &spec.NodeGetInfoResponse{NodeId: s.id, MaxVolumesPerNode: s.d.cfg.Nodes[s.id]}, nil
}

func (s node) NodeGetCapabilities(ctx context.Context, _ *spec.NodeGetCapabilitiesRequest) (*spec.NodeGetCapabilitiesResponse, error) {
	if err := s.d.before(ctx, "NodeGetCapabilities"); err != nil {
		return nil, err
	}
	r := &spec.NodeGetCapabilitiesResponse{}
	if s.d.cfg.StageUnstage {
		r.Capabilities = append(r.Capabilities, &spec.NodeServiceCapability{Type: &spec.NodeServiceCapability_Rpc{
			Rpc: &spec.NodeServiceCapability_RPC{Type: spec.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}})
	}
	return r, nil
}

// checkPublished fails unless v is published to this node with exactly
// the publish context pc (a real driver would not find the device). A
// driver without controller publishing checks nothing.
func (s node) checkPublished(v *volume, pc map[string]string) error {
	if s.d.cfg.NoPublish {
		return nil
	}
	p, ok := v.published[s.id]
	if !ok {
		return status.Errorf(codes.FailedPrecondition, "volume %s is not published to node %s", v.id, s.id)
	}
	if !maps.Equal(p.context, pc) {
		return status.Errorf(codes.FailedPrecondition, "volume %s: publish context %v, published with %v", v.id, pc, p.context)
	}
	return nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func (s node) NodeStageVolume(ctx context.Context, req *spec.NodeStageVolumeRequest) (*spec.NodeStageVolumeResponse, error) {
	s.d.record(Call{Method: "NodeStageVolume", Volume: req.GetVolumeId(), Node: s.id, Path: req.GetStagingTargetPath()}.
		capability(req.GetVolumeCapability()).sent(req.GetVolumeContext(), req.GetSecrets()))
	if err := s.d.before(ctx, "NodeStageVolume"); err != nil {
		return nil, err
	}
	switch {
	case !s.d.cfg.StageUnstage:
		return nil, status.Error(codes.Unimplemented, "NodeStageVolume")
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case req.GetStagingTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "staging target path missing")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	}
	if err := s.d.supports(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if err := s.d.checkSecrets(req.GetSecrets()); err != nil {
		return nil, err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	}
	if err := d.checkVolumeContext(v, req.GetVolumeContext()); err != nil {
		return nil, err
	}
	if err := s.checkPublished(v, req.GetPublishContext()); err != nil {
		return nil, err
	}
	// A directory the CO created, for access type Block as for Mount.
	if !isDir(req.GetStagingTargetPath()) {
		// The CO creates it (the spec); this one did not.
		return nil, status.Errorf(codes.InvalidArgument, "staging target path %s is no directory", req.GetStagingTargetPath())
	}
	if v.staged[s.id] == nil {
		v.staged[s.id] = map[string]bool{}
	}
	v.staged[s.id][req.GetStagingTargetPath()] = true
	return &spec.NodeStageVolumeResponse{}, nil
}

func (s node) NodeUnstageVolume(ctx context.Context, req *spec.NodeUnstageVolumeRequest) (*spec.NodeUnstageVolumeResponse, error) {
	s.d.record(Call{Method: "NodeUnstageVolume", Volume: req.GetVolumeId(), Node: s.id, Path: req.GetStagingTargetPath()})
	if err := s.d.before(ctx, "NodeUnstageVolume"); err != nil {
		return nil, err
	}
	switch {
	case !s.d.cfg.StageUnstage:
		return nil, status.Error(codes.Unimplemented, "NodeUnstageVolume")
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case req.GetStagingTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "staging target path missing")
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	}
	delete(v.staged[s.id], req.GetStagingTargetPath())
	return &spec.NodeUnstageVolumeResponse{}, nil
}

func (s node) NodePublishVolume(ctx context.Context, req *spec.NodePublishVolumeRequest) (*spec.NodePublishVolumeResponse, error) {
	s.d.record(Call{Method: "NodePublishVolume", Volume: req.GetVolumeId(), Node: s.id, Path: req.GetTargetPath(),
		ReadOnly: req.GetReadonly(), Staging: req.GetStagingTargetPath()}.
		capability(req.GetVolumeCapability()).sent(req.GetVolumeContext(), req.GetSecrets()))
	if err := s.d.before(ctx, "NodePublishVolume"); err != nil {
		return nil, err
	}
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "target path missing")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	}
	if err := s.d.supports(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if err := s.d.checkSecrets(req.GetSecrets()); err != nil {
		return nil, err
	}
	d, path := s.d, req.GetTargetPath()
	want := target{readOnly: req.GetReadonly(), block: req.GetVolumeCapability().GetBlock() != nil}
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	}
	if err := d.checkVolumeContext(v, req.GetVolumeContext()); err != nil {
		return nil, err
	}
	if err := s.checkPublished(v, req.GetPublishContext()); err != nil {
		return nil, err
	}
	if d.cfg.StageUnstage && !v.staged[s.id][req.GetStagingTargetPath()] {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %q on node %s", v.id, req.GetStagingTargetPath(), s.id)
	}
	if t, ok := v.targets[s.id][path]; ok {
		if t != want {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s is published at %s with readonly %v, block %v", v.id, path, t.readOnly, t.block)
		}
		v.lastNode = s.id
		return &spec.NodePublishVolumeResponse{}, nil
	}
	for _, o := range d.vols {
		if _, ok := o.targets[s.id][path]; ok {
			return nil, status.Errorf(codes.FailedPrecondition, "target %s shows volume %s", path, o.id)
		}
	}
	if err := makeTarget(path, want.block); err != nil {
		return nil, err
	}
	if v.targets[s.id] == nil {
		v.targets[s.id] = map[string]target{}
	}
	v.targets[s.id][path] = want
	v.lastNode = s.id
	return &spec.NodePublishVolumeResponse{}, nil
}

func (s node) NodeUnpublishVolume(ctx context.Context, req *spec.NodeUnpublishVolumeRequest) (*spec.NodeUnpublishVolumeResponse, error) {
	s.d.record(Call{Method: "NodeUnpublishVolume", Volume: req.GetVolumeId(), Node: s.id, Path: req.GetTargetPath()})
	if err := s.d.before(ctx, "NodeUnpublishVolume"); err != nil {
		return nil, err
	}
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "target path missing")
	}
	d, path := s.d, req.GetTargetPath()
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	}
	if _, ok := v.targets[s.id][path]; !ok {
		return &spec.NodeUnpublishVolumeResponse{}, nil
	}
	// The SP removes the target it created, directory or file (the spec).
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "removing the target: %v", err)
	}
	delete(v.targets[s.id], path)
	return &spec.NodeUnpublishVolumeResponse{}, nil
}
