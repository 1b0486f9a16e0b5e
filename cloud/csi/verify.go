package csi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
)

// GetConcurrency bounds the ControllerGetVolume calls in flight for one
// VolumesAreAttached or InstanceVolumes call (Verification ByGet).
const GetConcurrency = 8

// published maps volumes to the node IDs they are published to.
type published map[cloud.VolumeID][]cloud.InstanceID

// VolumesAreAttached implements cloud.Provider. ByList: one ListVolumes
// paging loop answers for every instance of the query; ByGet: one
// ControllerGetVolume per distinct volume of the query (a volume the
// driver does not know is attached nowhere). An instance no node has is
// answered like any other: the driver's published_node_ids are the truth.
func (p *Provider) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	if len(query) == 0 {
		return map[cloud.InstanceID]map[cloud.VolumeID]bool{}, nil
	}
	var vols []cloud.VolumeID
	for _, vs := range query {
		vols = append(vols, vs...)
	}
	pub, err := p.published(ctx, vols)
	if err != nil {
		return nil, err
	}
	return attachedIn(query, pub), nil
}

// InstanceVolumes implements cloud.Provider. An instance is live while a
// registered node has its ID (SetNodeID): a live one maps to what is
// published to it, with the device path of this Provider's Attach ("" if
// it made none: tether keeps the path it recorded); others are absent.
// ByList: one ListVolumes paging loop sees every volume. ByGet: only the
// volumes WithVolumes lists plus those this Provider attached are asked
// about; without WithVolumes it fails rather than answer "nothing" about
// volumes it cannot see.
func (p *Provider) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	live := p.live(insts)
	if len(live) == 0 {
		return map[cloud.InstanceID]map[cloud.VolumeID]string{}, nil
	}
	var vols []cloud.VolumeID
	if p.verify == ByGet {
		if p.cfg.volumes == nil {
			return nil, fmt.Errorf("csi: InstanceVolumes: driver %q has no LIST_VOLUMES_PUBLISHED_NODES, and no volume list was configured (WithVolumes) to ask ControllerGetVolume about: %w", p.plugin.Name, cloud.ErrTerminal)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("csi: InstanceVolumes: not sent: %w", err)
		}
		listed, err := p.cfg.volumes(ctx)
		if err != nil {
			return nil, fmt.Errorf("csi: InstanceVolumes: listing tether's volumes: %v: %w", err, cloud.ErrRetryable)
		}
		vols = slices.Concat(listed, p.attached())
	}
	pub, err := p.published(ctx, vols)
	if err != nil {
		return nil, err
	}
	return volumesOf(live, pub, p.device), nil
}

// attachedIn answers a VolumesAreAttached query from pub.
func attachedIn(query map[cloud.InstanceID][]cloud.VolumeID, pub published) map[cloud.InstanceID]map[cloud.VolumeID]bool {
	out := make(map[cloud.InstanceID]map[cloud.VolumeID]bool, len(query))
	for inst, vols := range query {
		m := make(map[cloud.VolumeID]bool, len(vols))
		for _, v := range vols {
			m[v] = slices.Contains(pub[v], inst)
		}
		out[inst] = m
	}
	return out
}

// volumesOf answers InstanceVolumes for the live instances from pub, with
// the device paths device knows.
func volumesOf(live map[cloud.InstanceID]bool, pub published, device func(cloud.VolumeID, cloud.InstanceID) string) map[cloud.InstanceID]map[cloud.VolumeID]string {
	out := make(map[cloud.InstanceID]map[cloud.VolumeID]string, len(live))
	for inst := range live {
		out[inst] = map[cloud.VolumeID]string{}
	}
	for vol, nodes := range pub {
		for _, inst := range nodes {
			if m, ok := out[inst]; ok {
				m[vol] = device(vol, inst)
			}
		}
	}
	return out
}

// published asks the driver where volumes are published: all of them
// (ByList; vols is ignored) or vols (ByGet).
func (p *Provider) published(ctx context.Context, vols []cloud.VolumeID) (published, error) {
	if p.verify == ByList {
		return p.list(ctx)
	}
	return p.get(ctx, vols)
}

// list runs one ListVolumes paging loop. A token the driver gave before
// would loop for ever: it fails instead. ABORTED (the driver no longer
// knows a token, e.g. volumes changed between pages) fails the whole
// call, retryably: the next call starts over.
func (p *Provider) list(ctx context.Context) (published, error) {
	out := published{}
	seen := map[string]bool{}
	token := ""
	for page := 1; ; page++ {
		req := &spec.ListVolumesRequest{StartingToken: token}
		r, err := call(ctx, fmt.Sprintf("ListVolumes (page %d)", page), false, func(c context.Context) (*spec.ListVolumesResponse, error) {
			return p.ctl.ListVolumes(c, req)
		})
		if err != nil {
			return nil, err
		}
		for _, e := range r.GetEntries() {
			v := cloud.VolumeID(e.GetVolume().GetVolumeId())
			for _, n := range e.GetStatus().GetPublishedNodeIds() {
				out[v] = append(out[v], cloud.InstanceID(n))
			}
		}
		token = r.GetNextToken()
		if token == "" {
			return out, nil
		}
		if seen[token] {
			return nil, fmt.Errorf("csi: ListVolumes (page %d): the driver gave next_token %q twice: %w", page, token, cloud.ErrTerminal)
		}
		seen[token] = true
	}
}

// get asks ControllerGetVolume about each distinct volume of vols, at most
// GetConcurrency at a time. NOT_FOUND: published nowhere. The first
// failure (in the order of vols) fails the whole call.
func (p *Provider) get(ctx context.Context, vols []cloud.VolumeID) (published, error) {
	vols = slices.Clone(vols)
	slices.Sort(vols)
	vols = slices.Compact(vols)
	nodes := make([][]string, len(vols))
	errs := make([]error, len(vols))
	sem := make(chan struct{}, GetConcurrency)
	var wg sync.WaitGroup
	for i, v := range vols {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			req := &spec.ControllerGetVolumeRequest{VolumeId: string(v)}
			r, err := call(ctx, "ControllerGetVolume "+string(v), false, func(c context.Context) (*spec.ControllerGetVolumeResponse, error) {
				return p.ctl.ControllerGetVolume(c, req)
			})
			if errors.Is(err, cloud.ErrNotFound) {
				err = nil
			}
			nodes[i], errs[i] = r.GetStatus().GetPublishedNodeIds(), err
		})
	}
	wg.Wait()
	out := published{}
	for i, v := range vols {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, n := range nodes[i] {
			out[v] = append(out[v], cloud.InstanceID(n))
		}
	}
	return out, nil
}
