package process

// The CSI account's provider calls (counted; attaches held to the node
// plugin's max_volumes_per_node) and its administration: what an apply
// and the API ask of a cloud account, done where a CSI driver can and
// refused where it cannot (see account_csi.go).

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
)

// InstanceID implements cloud.Provider.
func (a *csiAccount) InstanceID(ctx context.Context, n cloud.NodeName) (cloud.InstanceID, error) {
	return a.p.InstanceID(ctx, n)
}

// BatchSize implements cloud.Provider.
func (a *csiAccount) BatchSize() int { return a.p.BatchSize() }

// Listing implements cloud.Lister: the driver's (cloud/csi.Provider.Listing).
func (a *csiAccount) Listing() cloud.Listing { return a.p.Listing() }

// Attach implements cloud.Provider (counted): ControllerPublishVolume,
// unless the node would exceed its plugin's max_volumes_per_node.
func (a *csiAccount) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	a.attach.Add(1)
	release, err := a.reserve(ctx, vol, inst)
	if err != nil {
		return "", err
	}
	defer release()
	return a.p.Attach(ctx, vol, inst)
}

// reserve counts vol among the volumes of the node inst while its attach
// is in flight, or refuses it (cloud.ErrLimitReached, nothing sent) if
// the node already has its plugin's max_volumes_per_node. The count is
// tether's own (used): never the driver's listing, which a driver
// without LIST_VOLUMES_PUBLISHED_NODES fills loosely. A volume already
// counted takes no new room (an attach again is idempotent). A
// RESOURCE_EXHAUSTED answer (the driver's own limit) is not counted:
// nothing was published.
func (a *csiAccount) reserve(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (release func(), err error) {
	np, ok := a.infoOf(inst)
	if !ok || np.max == 0 {
		return func() {}, nil
	}
	limit := np.max
	a.limitMu.Lock()
	defer a.limitMu.Unlock()
	used, err := a.used(np)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("csi: ControllerPublishVolume %s to %s: not sent: %w", vol, inst, cerr)
		}
		// Not the call's own error: nothing was sent, whatever it says.
		return nil, fmt.Errorf("csi: ControllerPublishVolume %s to %s: counting the node's volumes first, nothing sent: %v: %w", vol, inst, err, cloud.ErrRetryable)
	}
	for v := range a.inflight[inst] {
		used[v] = true
	}
	if !used[vol] && int64(len(used)) >= limit {
		return nil, fmt.Errorf("csi: ControllerPublishVolume %s to %s: not sent: tether has %d volumes published or being published to the node, its plugin's max_volumes_per_node is %d: %w",
			vol, inst, len(used), limit, cloud.ErrLimitReached)
	}
	if a.inflight[inst] == nil {
		a.inflight[inst] = map[cloud.VolumeID]int{}
	}
	a.inflight[inst][vol]++
	return func() {
		a.limitMu.Lock()
		defer a.limitMu.Unlock()
		m := a.inflight[inst]
		if m[vol]--; m[vol] == 0 {
			delete(m, vol)
		}
		if len(m) == 0 {
			delete(a.inflight, inst)
		}
	}, nil
}

// used is what tether published to np's node ID and has not
// unpublished, from its records: the node status's VolumesAttached and
// VolumesDetaching (prepared for detach, still published until the
// detach returns), and the publishes of this process not yet unpublished
// (a publish is in the node status only once its volume actor reported
// it).
func (a *csiAccount) used(np csiNodeInfo) (map[cloud.VolumeID]bool, error) {
	used := map[cloud.VolumeID]bool{}
	for _, v := range a.p.Published(np.id) {
		used[v] = true
	}
	ref := a.store.Load()
	if ref == nil {
		return nil, errors.New("the store is not open yet")
	}
	st, ok, err := ref.NodeStatus(np.name)
	if err != nil || !ok {
		return used, err
	}
	for v := range st.VolumesAttached {
		used[v] = true
	}
	for v := range st.VolumesDetaching {
		used[v] = true
	}
	return used, nil
}

// Detach implements cloud.Provider (counted).
func (a *csiAccount) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	a.detach.Add(1)
	return a.p.Detach(ctx, vol, inst)
}

// VolumesAreAttached implements cloud.Provider (counted).
func (a *csiAccount) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	a.verify.Add(1)
	return a.p.VolumesAreAttached(ctx, q)
}

// InstanceVolumes implements cloud.Provider (counted).
func (a *csiAccount) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	a.verify.Add(1)
	return a.p.InstanceVolumes(ctx, insts)
}

// CallCounts implements Account.
func (a *csiAccount) CallCounts() CallCounts {
	return CallCounts{Attach: int(a.attach.Load()), Detach: int(a.detach.Load()), Verify: int(a.verify.Load())}
}

// Attachments implements Account: what is published to tether's nodes
// (other node IDs are the driver's business), as the driver lists it; nil
// if it does not answer or cannot list (no LIST_VOLUMES_PUBLISHED_NODES:
// ask the driver's own tooling).
func (a *csiAccount) Attachments() map[cloud.VolumeID][]cloud.InstanceID {
	ctx, cancel := context.WithTimeout(context.Background(), csiCallTimeout)
	defer cancel()
	got, err := a.p.InstanceVolumes(ctx, a.instances())
	if err != nil {
		return nil
	}
	out := map[cloud.VolumeID][]cloud.InstanceID{}
	for _, inst := range a.instances() {
		for v := range got[inst] {
			out[v] = append(out[v], inst)
		}
	}
	return out
}

// errNoInstances refuses instance administration: with a CSI driver the
// node is the machine its node plugin runs on.
func errNoInstances(what string) error {
	return fmt.Errorf("%w: %s: a CSI driver has no instances to administer: the node is the machine its node plugin runs on (stop, start or replace that machine yourself; tether follows the node ID its plugin reports)", controller.ErrInvalid, what)
}

// AddInstances implements Account: each node has its plugin's node ID
// already; any other node has no node plugin.
func (a *csiAccount) AddInstances(nodes []cloud.NodeName) error {
	for _, n := range nodes {
		if _, err := a.AddInstanceChecked(n); err != nil {
			return err
		}
	}
	return nil
}

// AddInstanceChecked implements cloud.Provisioner: a node's instance is its
// plugin's node ID; a node with no node plugin is refused.
func (a *csiAccount) AddInstanceChecked(n cloud.NodeName) (cloud.InstanceID, error) {
	if a.remote {
		// The node's agent reports its plugin's node ID when it starts.
		np, _ := a.infoNamed(n)
		return np.id, nil
	}
	np, ok := a.infoNamed(n)
	if !ok {
		return "", fmt.Errorf("%w: node %q: tether runs %d nodes with a CSI node plugin each (%s): another node has no plugin to mount with", controller.ErrInvalid, n, len(a.nodes), a.describeNodes())
	}
	return np.id, nil
}

// InstanceOf implements cloud.Provisioner.
func (a *csiAccount) InstanceOf(n cloud.NodeName) (cloud.InstanceID, bool) {
	np, ok := a.infoNamed(n)
	return np.id, ok && np.id != ""
}

// Running implements cloud.Provisioner: a node plugin's machine runs (tether
// runs on it).
func (a *csiAccount) Running(inst cloud.InstanceID) bool {
	if a.remote {
		// inst is a node ID some agent reported (InstanceOf): its node
		// plugin ran there. Whether it still does is the node's
		// readiness.
		return inst != ""
	}
	_, ok := a.infoOf(inst)
	return ok
}

// Terminate implements cloud.Provisioner: refused.
func (a *csiAccount) Terminate(inst cloud.InstanceID) error {
	return errNoInstances("terminate " + string(inst))
}

// Start implements cloud.Provisioner: refused.
func (a *csiAccount) Start(inst cloud.InstanceID) error {
	return errNoInstances("start " + string(inst))
}

// Delete implements cloud.Provisioner: refused.
func (a *csiAccount) Delete(inst cloud.InstanceID) error {
	return errNoInstances("delete " + string(inst))
}

// validate checks that the driver has each volume and confirms its
// mode's capability (MULTI_NODE_READER_ONLY for a ReadOnlyMany one);
// nothing is created. A refusal wraps
// controller.ErrInvalid and says what to do.
func (a *csiAccount) validate(vols []cloud.VolumeSpec) error {
	ctx, cancel := context.WithTimeout(context.Background(), csiCallTimeout)
	defer cancel()
	driver := a.p.Plugin().Name
	for _, v := range vols {
		err := a.p.Validate(ctx, v.ID, cloudcsi.Access{Mode: v.Mode, ReadOnly: v.ReadOnly})
		switch cloud.Classify(err) {
		case cloud.KindNone:
		case cloud.KindNotFound:
			return fmt.Errorf("%w: volume %q: CSI driver %q has no volume with that ID: tether does not create CSI volumes; provision it with the driver (its volume ID is the tether volume's name), then apply again", controller.ErrInvalid, v.ID, driver)
		case cloud.KindTerminal:
			return fmt.Errorf("%w: volume %q cannot be used %s: %v", controller.ErrInvalid, v.ID, controller.ModeName(v.Mode, v.ReadOnly), err)
		default:
			return fmt.Errorf("volume %q: could not ask CSI driver %q about it (apply again): %w", v.ID, driver, err)
		}
	}
	return nil
}

// CreateVolume implements Account: the driver must have the volume (see
// validate); nothing is created.
func (a *csiAccount) CreateVolume(id cloud.VolumeID, mode cloud.AccessMode) error {
	return a.validate([]cloud.VolumeSpec{{ID: id, Mode: mode}})
}

// CreateVolumesUncommitted implements cloud.Provisioner: the volumes an apply
// names that tether does not know yet (Volume) must exist in the driver
// with their mode's capability (validate); nothing is created, so nothing
// is tagged.
func (a *csiAccount) CreateVolumesUncommitted(vols []cloud.VolumeSpec) error { return a.validate(vols) }

// CommitVolumes implements cloud.Provisioner: nothing was tagged.
func (a *csiAccount) CommitVolumes([]cloud.VolumeID) error { return nil }

// CommitVolume implements cloud.Provisioner: nothing was tagged.
func (a *csiAccount) CommitVolume(cloud.VolumeID) error { return nil }

// Uncommitted implements cloud.Provisioner: tether creates no CSI volume.
func (a *csiAccount) Uncommitted(cloud.VolumeID) bool { return false }

// Volume implements cloud.Provisioner from tether's store: a volume tether knows
// was checked in the driver when it was applied, with the mode it has
// there. One it does not know is reported missing, so that an apply of
// it is checked (CreateVolumesUncommitted). The driver is not asked: a
// listing of volumes would ask it once per volume.
func (a *csiAccount) Volume(id cloud.VolumeID) (cloud.AccessMode, []cloud.InstanceID, bool) {
	ref := a.store.Load()
	if ref == nil {
		return 0, nil, false
	}
	spec, ok, err := ref.Volume(id)
	if err != nil || !ok {
		return 0, nil, false
	}
	return spec.Mode, nil, true
}

// DeleteVolume implements cloud.Provisioner: the volume is the driver's, and
// stays (an apply that failed only forgets the volumes it checked).
func (a *csiAccount) DeleteVolume(cloud.VolumeID) error { return nil }

// ConsoleDetach unpublishes vol from inst behind tether's back, as an
// operator would with the driver's own tooling (ControllerUnpublishVolume,
// not counted): for fault injection.
func (a *csiAccount) ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error {
	ctx, cancel := context.WithTimeout(context.Background(), csiCallTimeout)
	defer cancel()
	return a.p.Detach(ctx, vol, inst)
}
