package csitest

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type controller struct {
	spec.UnimplementedControllerServer
	d *Driver
}

func (s controller) ControllerGetCapabilities(ctx context.Context, _ *spec.ControllerGetCapabilitiesRequest) (*spec.ControllerGetCapabilitiesResponse, error) {
	if err := s.d.before(ctx, "ControllerGetCapabilities"); err != nil {
		return nil, err
	}
	c := s.d.cfg
	types := []spec.ControllerServiceCapability_RPC_Type{spec.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	for _, t := range []struct {
		on  bool
		typ spec.ControllerServiceCapability_RPC_Type
	}{
		{!c.NoPublish, spec.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME},
		{!c.NoPublish && !c.NoPublishReadOnly, spec.ControllerServiceCapability_RPC_PUBLISH_READONLY},
		{c.List, spec.ControllerServiceCapability_RPC_LIST_VOLUMES},
		{c.List && c.ListPublished, spec.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES},
		{c.GetVolume, spec.ControllerServiceCapability_RPC_GET_VOLUME},
	} {
		if t.on {
			types = append(types, t.typ)
		}
	}
	r := &spec.ControllerGetCapabilitiesResponse{}
	for _, t := range types {
		r.Capabilities = append(r.Capabilities, &spec.ControllerServiceCapability{
			Type: &spec.ControllerServiceCapability_Rpc{Rpc: &spec.ControllerServiceCapability_RPC{Type: t}}})
	}
	return r, nil
}

func (s controller) CreateVolume(ctx context.Context, req *spec.CreateVolumeRequest) (*spec.CreateVolumeResponse, error) {
	s.d.record(Call{Method: "CreateVolume", Volume: req.GetName()}.sent(nil, req.GetSecrets()))
	if err := s.d.before(ctx, "CreateVolume"); err != nil {
		return nil, err
	}
	switch {
	case req.GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "name missing")
	case len(req.GetVolumeCapabilities()) == 0:
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	want, limit := req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes()
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.byName[req.GetName()]; ok {
		v := d.vols[id]
		if v.capacity < want || (limit > 0 && v.capacity > limit) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes", req.GetName(), v.capacity)
		}
		return &spec.CreateVolumeResponse{Volume: v.proto()}, nil
	}
	size := want
	if size == 0 {
		size = 1 << 30
		if limit > 0 {
			size = min(size, limit)
		}
	}
	d.next++
	id := "vol-" + strconv.Itoa(d.next)
	v := d.newVolume(id, req.GetName(), size)
	d.vols[id] = v
	d.byName[req.GetName()] = id
	return &spec.CreateVolumeResponse{Volume: v.proto()}, nil
}

func (s controller) DeleteVolume(ctx context.Context, req *spec.DeleteVolumeRequest) (*spec.DeleteVolumeResponse, error) {
	s.d.record(Call{Method: "DeleteVolume", Volume: req.GetVolumeId()}.sent(nil, req.GetSecrets()))
	if err := s.d.before(ctx, "DeleteVolume"); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	if v == nil {
		return &spec.DeleteVolumeResponse{}, nil
	}
	if len(v.published) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is published to %v", v.id, d.publishedTo(v.id))
	}
	delete(d.vols, v.id)
	delete(d.byName, v.name)
	return &spec.DeleteVolumeResponse{}, nil
}

func (s controller) ValidateVolumeCapabilities(ctx context.Context, req *spec.ValidateVolumeCapabilitiesRequest) (*spec.ValidateVolumeCapabilitiesResponse, error) {
	var first *spec.VolumeCapability
	if cs := req.GetVolumeCapabilities(); len(cs) > 0 {
		first = cs[0]
	}
	s.d.record(Call{Method: "ValidateVolumeCapabilities", Volume: req.GetVolumeId()}.capability(first).
		sent(req.GetVolumeContext(), req.GetSecrets()))
	if err := s.d.before(ctx, "ValidateVolumeCapabilities"); err != nil {
		return nil, err
	}
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case len(req.GetVolumeCapabilities()) == 0:
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.d.vols[req.GetVolumeId()] == nil {
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := s.d.supports(c); err != nil {
			return &spec.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
		}
	}
	return &spec.ValidateVolumeCapabilitiesResponse{Confirmed: &spec.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

// singleNode reports whether mode allows one node only.
func singleNode(mode spec.VolumeCapability_AccessMode_Mode) bool {
	switch mode {
	case spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, spec.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		spec.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, spec.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// publishContext is the context of publishing v to node: the lowest
// device slot the node does not use for another volume (a device path is
// reused once its volume is gone, as on a cloud).
func (d *Driver) publishContext(v *volume, node string) map[string]string {
	used := map[string]bool{}
	for _, o := range d.vols {
		if p, ok := o.published[node]; ok && o != v {
			used[p.context["devicePath"]] = true
		}
	}
	for i := 0; ; i++ {
		dev := fmt.Sprintf("/dev/fake%d", i)
		if !used[dev] {
			return map[string]string{"devicePath": dev, "volume": v.id}
		}
	}
}

func (s controller) ControllerPublishVolume(ctx context.Context, req *spec.ControllerPublishVolumeRequest) (*spec.ControllerPublishVolumeResponse, error) {
	s.d.record(Call{Method: "ControllerPublishVolume", Volume: req.GetVolumeId(), Node: req.GetNodeId(), ReadOnly: req.GetReadonly()}.
		capability(req.GetVolumeCapability()).sent(req.GetVolumeContext(), req.GetSecrets()))
	if err := s.d.before(ctx, "ControllerPublishVolume"); err != nil {
		return nil, err
	}
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case req.GetNodeId() == "":
		return nil, status.Error(codes.InvalidArgument, "node ID missing")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	case req.GetReadonly() && s.d.cfg.NoPublishReadOnly:
		return nil, status.Error(codes.InvalidArgument, "readonly set, but PUBLISH_READONLY is not offered")
	}
	if err := s.d.supports(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if err := s.d.checkSecrets(req.GetSecrets()); err != nil {
		return nil, err
	}
	d, node, mode := s.d, req.GetNodeId(), req.GetVolumeCapability().GetAccessMode().GetMode()
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	limit, known := d.cfg.Nodes[node]
	switch {
	case v == nil:
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	case !known:
		return nil, status.Errorf(codes.NotFound, "no node %s", node)
	}
	if err := d.checkVolumeContext(v, req.GetVolumeContext()); err != nil {
		return nil, err
	}
	if p, ok := v.published[node]; ok {
		if p.readOnly != req.GetReadonly() || p.mode != mode {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s is published to %s with another capability", v.id, node)
		}
		return &spec.ControllerPublishVolumeResponse{PublishContext: maps.Clone(p.context)}, nil
	}
	if others := d.publishedTo(v.id); len(others) > 0 && singleNode(mode) && !d.cfg.MultiAttach {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is published to node %s", v.id, others[0])
	}
	// Config.EnforceNodeLimit: enforced whatever it says, as it always was.
	if limit > 0 && d.count(node) >= limit {
		return nil, status.Errorf(codes.ResourceExhausted, "node %s has its %d volumes, its max_volumes_per_node", node, limit)
	}
	p := publication{readOnly: req.GetReadonly(), mode: mode, context: d.publishContext(v, node)}
	v.published[node] = p
	return &spec.ControllerPublishVolumeResponse{PublishContext: maps.Clone(p.context)}, nil
}

// count is how many volumes are published to node.
func (d *Driver) count(node string) int64 {
	var n int64
	for _, v := range d.vols {
		if _, ok := v.published[node]; ok {
			n++
		}
	}
	return n
}

func (s controller) ControllerUnpublishVolume(ctx context.Context, req *spec.ControllerUnpublishVolumeRequest) (*spec.ControllerUnpublishVolumeResponse, error) {
	s.d.record(Call{Method: "ControllerUnpublishVolume", Volume: req.GetVolumeId(), Node: req.GetNodeId()}.sent(nil, req.GetSecrets()))
	if err := s.d.before(ctx, "ControllerUnpublishVolume"); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if err := s.d.checkSecrets(req.GetSecrets()); err != nil {
		return nil, err
	}
	d, node := s.d, req.GetNodeId()
	d.mu.Lock()
	defer d.mu.Unlock()
	// The spec: an unknown volume or node is "safely regarded as
	// unpublished": OK; an empty node ID unpublishes from every node.
	if v := d.vols[req.GetVolumeId()]; v != nil && node == "" {
		clear(v.published)
	} else if v != nil {
		delete(v.published, node)
	}
	return &spec.ControllerUnpublishVolumeResponse{}, nil
}
