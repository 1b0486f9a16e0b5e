package api

// Provisioning: the cloud resources an apply needs (a disk per volume, an
// instance per node) exist before the apply commits, and only for an
// apply that commits. An apply runs, one at a time:
//
//  1. validate: the controller's dry run (controller.Validate); a refused
//     apply touches nothing;
//  2. plan: for every document, what the cloud has now decides what to do
//     (planVolume): nothing, create, recreate, or refuse;
//  3. provision: carry out the plan, remembering what it created: the
//     left-over disks to recreate are deleted, then every disk is created
//     at once (one durable write in the cloud, all or nothing), then the
//     instances;
//  4. commit (controller.Commit, which validates again only if the
//     desired state changed since step 1); if provisioning or the commit
//     fails, what step 3 created is removed again (undo).
//
// A disk made in step 3 is tagged "uncommitted" in the cloud until its
// apply has committed (step 5: the tag is removed). A process killed
// between 3 and 5 leaves disks and instances that no desired object names,
// the disks tagged. The next apply naming them adopts them: an instance is
// reused; a disk with the asked mode is reused; a tagged disk with another
// mode, never committed and so never attached and empty, is deleted and
// made again with the asked mode. Any other disk with another mode (a
// deleted volume's, which may hold its data) is never deleted: the apply is
// refused, saying what to do.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/runtime/parallel"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// disk is what the cloud has under a volume's name.
type disk struct {
	exists bool
	mode   cloud.AccessMode
	// readOnly: a ReadOnlyMany disk. A cloud that does not say
	// (cloud.ReadOnlyDisks) has it as the volume asked for: see diskOf.
	readOnly    bool
	attached    []cloud.InstanceID
	uncommitted bool // made by an apply that never committed: empty
}

// name is the disk's mode as Kubernetes names it.
func (d disk) name() string { return controller.ModeName(d.mode, d.readOnly) }

// stepKind is one provisioning action.
type stepKind int

const (
	createDisk     stepKind = iota + 1
	recreateDisk            // delete the disk (attached nowhere), then createDisk
	createInstance          // an instance to back a node
)

// step is one provisioning action, carried out in document order.
type step struct {
	kind     stepKind
	vol      cloud.VolumeID
	mode     cloud.AccessMode
	readOnly bool
	node     cloud.NodeName
	spec     store.VolumeSpec // a disk's volume, whole (DriverVolumes)
}

// planVolume decides what the cloud must do for the volume document
// asked, given the volume's desired spec (nil if it is not desired yet;
// Validate refused a change of its mode already) and its disk. It returns
// no step when the disk is right as it is, and an error wrapping
// controller.ErrInvalid when the disk's mode cannot be made right. A
// disk's mode is its access mode and, where the cloud says, whether it is
// read-only.
func planVolume(asked store.VolumeSpec, desired *store.VolumeSpec, d disk) (*step, error) {
	switch {
	case !d.exists:
		return &step{kind: createDisk, vol: asked.ID, mode: asked.Mode, readOnly: asked.ReadOnly, spec: asked}, nil
	case d.mode == asked.Mode && d.readOnly == asked.ReadOnly:
		return nil, nil
	case desired != nil:
		return nil, fmt.Errorf("%w: volume %q is %s in the desired state but its disk in the cloud is %s "+
			"(left by an older tether or changed outside it); delete volume/%s, after the workloads that use it, "+
			"and apply it again once its disk is detached: the disk is then made %s",
			controller.ErrInvalid, asked.ID, controller.ModeName(desired.Mode, desired.ReadOnly), d.name(), asked.ID, controller.ModeName(asked.Mode, asked.ReadOnly))
	case len(d.attached) > 0:
		return nil, fmt.Errorf("%w: volume %q: a disk of that name is left in the cloud (by a deleted volume or an apply that did not finish), "+
			"%s and attached to %v; it cannot become %s while attached: apply it again once it is detached, or apply it as %s",
			controller.ErrInvalid, asked.ID, d.name(), d.attached, controller.ModeName(asked.Mode, asked.ReadOnly), d.name())
	case !d.uncommitted:
		return nil, fmt.Errorf("%w: volume %q: a disk of that name is left in the cloud by a deleted volume, %s; it may hold that volume's data, "+
			"so tether never deletes it: apply %q as %s to use it again, pick another name, or delete the disk in the cloud first",
			controller.ErrInvalid, asked.ID, d.name(), asked.ID, d.name())
	}
	return &step{kind: recreateDisk, vol: asked.ID, mode: asked.Mode, readOnly: asked.ReadOnly, spec: asked}, nil
}

// diskOf is what the cloud has under asked's name, but for its
// uncommitted tag (plan's). A cloud that does not say whether a disk is
// read-only has it as asked wants it.
func (s *service) diskOf(asked store.VolumeSpec) disk {
	var d disk
	d.mode, d.attached, d.exists = s.nodes.Volume(asked.ID)
	return s.readOnlyOf(asked, d)
}

// readOnlyOf sets d.readOnly: the cloud's (cloud.ReadOnlyDisks), or asked's.
func (s *service) readOnlyOf(asked store.VolumeSpec, d disk) disk {
	d.readOnly = asked.ReadOnly
	if ro, ok := s.nodes.(cloud.ReadOnlyDisks); ok && d.exists {
		d.readOnly, _ = ro.VolumeReadOnly(asked.ID)
	}
	return d
}

// plan reads the desired state and the cloud and returns the steps that
// provision changes, or the refusal of one of them, and the volumes whose
// disks carry the uncommitted tag once provisioned (the disks it creates,
// and those it found tagged): what the commit untags. What it reads of
// each volume it reads first, for all of them at once (volumeFacts).
func (s *service) plan(changes []controller.Change) ([]step, []cloud.VolumeID, error) {
	facts, err := s.volumeFacts(changes)
	if err != nil {
		return nil, nil, err
	}
	var steps []step
	var tagged []cloud.VolumeID
	seen := map[cloud.VolumeID]bool{}
	for _, ch := range changes {
		switch {
		case ch.Volume != nil:
			if err := s.checkDriverFields(*ch.Volume); err != nil {
				return nil, nil, err
			}
			f := facts[ch.Volume.ID]
			st, err := planVolume(*ch.Volume, f.desired, f.disk)
			if err != nil {
				return nil, nil, err
			}
			if st != nil {
				steps = append(steps, *st)
			}
			if (st != nil || f.disk.uncommitted) && !seen[ch.Volume.ID] {
				seen[ch.Volume.ID] = true
				tagged = append(tagged, ch.Volume.ID)
			}
		case ch.Node != nil:
			if _, ok := s.nodes.InstanceOf(ch.Node.Name); !ok {
				steps = append(steps, step{kind: createInstance, node: ch.Node.Name})
			}
		}
	}
	return steps, tagged, nil
}

// volumeFact is what plan reads of a volume: its desired state (nil: none)
// and its disk.
type volumeFact struct {
	desired *store.VolumeSpec
	disk    disk
}

// lookups bounds the reads of an apply's volumes in flight at once: with
// a cloud (or a store) in another process each is a round trip, and a
// fleet's apply of 2,000 volumes spent seconds on them one after the other.
const lookups = 32

// volumeFacts reads the desired state and the disk of every volume
// changes name: the desired state in one read, the disks in one call of a
// cloud.DiskReader, else lookups at a time.
func (s *service) volumeFacts(changes []controller.Change) (map[cloud.VolumeID]volumeFact, error) {
	var vols []store.VolumeSpec
	var ids []cloud.VolumeID
	for _, ch := range changes {
		if ch.Volume != nil {
			vols = append(vols, *ch.Volume)
			ids = append(ids, ch.Volume.ID)
		}
	}
	desired, err := s.ctl.Store().VolumesOf(ids)
	if err != nil {
		return nil, err
	}
	disks, err := s.disksOf(vols)
	if err != nil {
		return nil, err
	}
	out := make(map[cloud.VolumeID]volumeFact, len(vols))
	for i, v := range vols { // the last change of a volume wins, as in plan
		f := volumeFact{disk: disks[i]}
		if old, ok := desired[v.ID]; ok {
			f.desired = &old
		}
		out[v.ID] = f
	}
	return out, nil
}

// disksOf reads the disk of each of vols, its uncommitted tag too: in one
// call of a cloud.DiskReader, else (or where the cloud says it cannot) one by
// one.
func (s *service) disksOf(vols []store.VolumeSpec) ([]disk, error) {
	out := make([]disk, len(vols))
	oneByOne := func() ([]disk, error) {
		forEach(len(vols), func(i int) {
			d := s.diskOf(vols[i])
			d.uncommitted = d.exists && s.nodes.Uncommitted(vols[i].ID)
			out[i] = d
		})
		return out, nil
	}
	dr, ok := s.nodes.(cloud.DiskReader)
	if !ok {
		return oneByOne()
	}
	ids := make([]cloud.VolumeID, len(vols))
	for i, v := range vols {
		ids[i] = v.ID
	}
	got, err := dr.Disks(ids)
	if errors.Is(err, errors.ErrUnsupported) { // a cloud service from before Disks
		return oneByOne()
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cloud's disks: %w", err)
	}
	for i, v := range vols {
		sd, found := got[v.ID]
		out[i] = s.readOnlyOf(v, disk{exists: found, mode: sd.Mode, attached: sd.AttachedTo, uncommitted: found && sd.Uncommitted})
	}
	return out, nil
}

// forEach runs f for 0..n-1, at most lookups at once.
func forEach(n int, f func(i int)) { parallel.Do(n, lookups, f) }

// created is what provisioning created, for undo.
type created struct {
	vols  []cloud.VolumeID
	insts []cloud.InstanceID
}

// provision carries out steps, stopping at the first error: the deletions
// of left-over disks, then the creation of every disk in one batch, then
// the instances, each kind in document order. made holds what it created
// (or may have: the disks of a batch that failed too, which undo finds
// gone). A cloud of DriverVolumes is handed the disks' volumes whole.
func (s *service) provision(steps []step) (made created, err error) {
	var disks []cloud.VolumeSpec
	var specs []store.VolumeSpec
	for _, st := range steps {
		switch st.kind {
		case recreateDisk:
			if err := s.nodes.DeleteVolume(st.vol); err != nil {
				return made, fmt.Errorf("volume %q: delete the left-over disk of another mode: %w", st.vol, err)
			}
			fallthrough
		case createDisk:
			disks = append(disks, cloud.VolumeSpec{ID: st.vol, Mode: st.mode, ReadOnly: st.readOnly})
			specs = append(specs, st.spec)
		}
	}
	if len(disks) > 0 {
		for _, d := range disks {
			made.vols = append(made.vols, d.ID)
		}
		create := func() error { return s.nodes.CreateVolumesUncommitted(disks) }
		if dv, ok := s.nodes.(DriverVolumes); ok {
			create = func() error { return dv.ProvisionVolumes(specs) }
		}
		if err := create(); err != nil {
			return made, err
		}
	}
	for _, st := range steps {
		if st.kind == createInstance {
			inst, err := s.nodes.AddInstanceChecked(st.node)
			if err != nil {
				return made, err
			}
			made.insts = append(made.insts, inst)
		}
	}
	return made, nil
}

// undo removes what provisioning created, newest first. What it cannot
// remove is named in its error; the next apply naming it adopts it.
func (s *service) undo(made created) error {
	var errs []error
	for _, id := range slices.Backward(made.vols) {
		if err := s.nodes.DeleteVolume(id); err != nil && !errors.Is(err, cloud.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	for _, inst := range slices.Backward(made.insts) {
		if err := s.nodes.Delete(inst); err != nil && !errors.Is(err, cloud.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("api: could not remove what the failed apply created (the next apply adopts it): %w", errors.Join(errs...))
}

// applyChanges validates changes, provisions the cloud for them and
// commits them, all or nothing (see the top of this file).
func (s *service) applyChanges(changes []controller.Change) ([]string, error) {
	s.applying.Lock()
	defer s.applying.Unlock()
	valid, err := s.ctl.Validate(changes)
	if err != nil {
		return nil, err
	}
	steps, tagged, err := s.plan(changes)
	if err != nil {
		return nil, err
	}
	made, err := s.provision(steps)
	if err != nil {
		return nil, errors.Join(err, s.undo(made))
	}
	applied, err := s.ctl.Commit(valid)
	if err != nil && applied == nil { // not committed
		return nil, errors.Join(err, s.undo(made))
	}
	return applied, errors.Join(err, s.commitDisks(tagged))
}

// commitDisks removes the "uncommitted" tag of the disks of the volumes an
// apply committed (5), all at once: plan's tagged, the disks it created
// and those it found tagged (applies run one at a time: no other apply of
// this server tags a disk meanwhile). They are desired now, and may come
// to hold data. A failure is reported, naming the volumes; the tags are
// removed by the next apply naming them, and until then the volumes, being
// desired, are never recreated.
func (s *service) commitDisks(ids []cloud.VolumeID) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.nodes.CommitVolumes(ids); err != nil {
		return fmt.Errorf("applied, but the disks of volumes %q are still tagged uncommitted (the next apply of them retries): %w", ids, err)
	}
	return nil
}

// shownMode is the access mode get shows for v: its disk's, the cloud's
// truth, with a warning when the desired state disagrees or there is no
// disk.
func (s *service) shownMode(v store.VolumeSpec) string {
	d, desired := s.diskOf(v), controller.ModeName(v.Mode, v.ReadOnly)
	switch {
	case !d.exists:
		return fmt.Sprintf("%s (WARNING: no disk in the cloud)", desired)
	case d.name() != desired:
		return fmt.Sprintf("%s (WARNING: desired %s; delete and recreate the volume)", d.name(), desired)
	}
	return desired
}
