package csi

import (
	"context"
	"fmt"
	"slices"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/tether/tether/cloud"
)

// published maps volumes to the node IDs they are published to.
type published map[cloud.VolumeID][]cloud.InstanceID

// Listing implements cloud.Lister: ByList reveals a publication gone
// missing but may name nodes the volume is not published to (the spec:
// published_node_ids "MAY include nodes not published to or reported by
// the SP"); ByRecord reveals nothing.
func (p *Provider) Listing() cloud.Listing {
	if p.verify == ByList {
		return cloud.ListingMayOverstate
	}
	return cloud.ListingNone
}

// errNoListing is the answer of VolumesAreAttached and InstanceVolumes
// ByRecord: nothing is asked.
func (p *Provider) errNoListing(op string) error {
	return fmt.Errorf("csi: %s: driver %q does not offer LIST_VOLUMES_PUBLISHED_NODES, so what it says of published nodes is not to be interpreted (CSI spec): tether's own records are the truth, nothing was asked: %w", op, p.plugin.Name, cloud.ErrTerminal)
}

// VolumesAreAttached implements cloud.Provider. ByList: one ListVolumes
// paging loop answers for every instance of the query; ByRecord: it fails
// without asking (errNoListing). An instance no node has is answered like
// any other.
func (p *Provider) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	if p.verify != ByList {
		return nil, p.errNoListing("VolumesAreAttached")
	}
	if len(query) == 0 {
		return map[cloud.InstanceID]map[cloud.VolumeID]bool{}, nil
	}
	pub, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	return attachedIn(query, pub), nil
}

// InstanceVolumes implements cloud.Provider. An instance is live while a
// registered node has its ID (SetNodeID): a live one maps to what is
// published to it, with the device path of this Provider's Attach ("" if
// it made none: tether keeps the path it recorded); others are absent.
// ByList: one ListVolumes paging loop sees every volume; ByRecord: it
// fails without asking (errNoListing).
func (p *Provider) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	if p.verify != ByList {
		return nil, p.errNoListing("InstanceVolumes")
	}
	live := p.live(insts)
	if len(live) == 0 {
		return map[cloud.InstanceID]map[cloud.VolumeID]string{}, nil
	}
	pub, err := p.list(ctx)
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
