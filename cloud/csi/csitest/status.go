package csitest

import (
	"context"
	"maps"
	"slices"
	"strconv"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// proto is v as the controller reports it.
func (v *volume) proto() *spec.Volume {
	return &spec.Volume{VolumeId: v.id, CapacityBytes: v.capacity, VolumeContext: maps.Clone(v.context)}
}

// publishedNodeIDs is v's published_node_ids: the nodes it is published
// to, or with Config.LoosePublishedNodes (and no ListPublished) its loose
// list: the node of the last NodePublishVolume that succeeded for it (""
// if none ever did), then Config.ExtraPublishedNodeIDs.
func (d *Driver) publishedNodeIDs(v *volume) []string {
	if !d.cfg.LoosePublishedNodes || d.cfg.ListPublished {
		return d.publishedTo(v.id)
	}
	return append([]string{v.lastNode}, d.cfg.ExtraPublishedNodeIDs...)
}

func (s controller) ListVolumes(ctx context.Context, req *spec.ListVolumesRequest) (*spec.ListVolumesResponse, error) {
	if err := s.d.before(ctx, "ListVolumes"); err != nil {
		return nil, err
	}
	d := s.d
	if !d.cfg.List {
		return nil, status.Error(codes.Unimplemented, "ListVolumes")
	}
	if req.GetMaxEntries() < 0 {
		return nil, status.Error(codes.InvalidArgument, "negative max_entries")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := slices.Sorted(maps.Keys(d.vols))
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(ids) {
			return nil, status.Errorf(codes.Aborted, "starting token %q is not one of mine", t)
		}
		start = n
	}
	size := int(req.GetMaxEntries())
	if size == 0 {
		size = d.cfg.PageSize
	}
	end := len(ids)
	if size > 0 {
		end = min(end, start+size)
	}
	r := &spec.ListVolumesResponse{}
	for _, id := range ids[start:end] {
		e := &spec.ListVolumesResponse_Entry{Volume: d.vols[id].proto()}
		if d.cfg.ListPublished || d.cfg.LoosePublishedNodes {
			e.Status = &spec.ListVolumesResponse_VolumeStatus{PublishedNodeIds: d.publishedNodeIDs(d.vols[id])}
		}
		r.Entries = append(r.Entries, e)
	}
	if end < len(ids) {
		r.NextToken = strconv.Itoa(end)
	}
	return r, nil
}

func (s controller) ControllerGetVolume(ctx context.Context, req *spec.ControllerGetVolumeRequest) (*spec.ControllerGetVolumeResponse, error) {
	s.d.record(Call{Method: "ControllerGetVolume", Volume: req.GetVolumeId()})
	if err := s.d.before(ctx, "ControllerGetVolume"); err != nil {
		return nil, err
	}
	d := s.d
	if !d.cfg.GetVolume {
		return nil, status.Error(codes.Unimplemented, "ControllerGetVolume")
	}
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[req.GetVolumeId()]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "no volume %s", req.GetVolumeId())
	}
	return &spec.ControllerGetVolumeResponse{
		Volume: v.proto(),
		Status: &spec.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: d.publishedNodeIDs(v)},
	}, nil
}
