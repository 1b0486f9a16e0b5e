package api

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// These tests judge the cloud's ground truth (the sim's volumes and
// instances), never what the API says about it.

// wantNoDisk fails if the sim has a volume id.
func (f *fixture) wantNoDisk(id cloud.VolumeID) {
	f.t.Helper()
	if mode, at, ok := f.cloud.Volume(id); ok {
		f.t.Fatalf("disk %s exists (%v, attached to %v), want none", id, mode, at)
	}
}

// wantDisk fails unless the sim has volume id with mode, attached to at.
func (f *fixture) wantDisk(id cloud.VolumeID, mode cloud.AccessMode, at ...cloud.InstanceID) {
	f.t.Helper()
	got, gotAt, ok := f.cloud.Volume(id)
	if !ok || got != mode || !slices.Equal(gotAt, at) {
		f.t.Fatalf("disk %s = %v attached to %v (exists %v), want %v attached to %v", id, got, gotAt, ok, mode, at)
	}
}

// wantNoInstance fails if the sim has an instance for node.
func (f *fixture) wantNoInstance(node cloud.NodeName) {
	f.t.Helper()
	if inst, ok := f.cloud.InstanceOf(node); ok {
		f.t.Fatalf("instance %s backs node %s, want none", inst, node)
	}
}

func (f *fixture) apply(docs ...*messages.Document) ([]string, error) {
	res, err := f.client().Apply(f.ctx(f.token), &messages.ApplyRequest{Documents: docs})
	return res.GetApplied(), err
}

func (f *fixture) mustApply(docs ...*messages.Document) []string {
	f.t.Helper()
	applied, err := f.apply(docs...)
	if err != nil {
		f.t.Fatal(err)
	}
	return applied
}

// shownMode is the access mode get volumes shows for id.
func (f *fixture) shownMode(id string) string {
	f.t.Helper()
	res, err := f.client().Get(f.ctx(f.token), &messages.GetRequest{Kind: "volume", Name: id})
	if err != nil || len(res.Volumes) != 1 {
		f.t.Fatalf("get volume %s: %v, %v", id, res, err)
	}
	return res.Volumes[0].Spec.AccessMode
}

// A refused apply creates no disk and no instance, so a volume refused as
// ReadWriteOnce can be applied as ReadWriteMany later and get that disk.
func TestRefusedApplyCreatesNothingInTheCloud(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name    string
		docs    []*messages.Document
		mention string
	}{
		{"unknown node", []*messages.Document{node("n9"), vol("x", ""), wl("w1", "nowhere", "x")}, `unknown node "nowhere"`},
		{"unknown volume", []*messages.Document{vol("x", ""), node("n9"), wl("w1", "n9", "ghost")}, `unknown volume "ghost"`},
		{"duplicate", []*messages.Document{node("n9"), vol("x", ""), node("n9")}, "document 3: node/n9 is also document 1"},
		{"empty document last", []*messages.Document{vol("x", ""), node("n9"), {}}, "empty document"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.apply(tt.docs...)
			wantCode(t, err, codes.InvalidArgument, tt.mention)
			f.nothingStored()
			f.wantNoDisk("x")
			f.wantNoInstance("n9")
		})
	}
	f.mustApply(vol("x", "ReadWriteMany"))
	f.wantDisk("x", cloud.MultiNode)
	if got := f.shownMode("x"); got != "ReadWriteMany" {
		t.Fatalf("get shows %q", got)
	}
}

// An access mode is fixed at creation: changing it is refused, naming the
// volume, both modes and the way out, and nothing of that apply happens.
func TestAccessModeChangeRefused(t *testing.T) {
	f := newFixture(t)
	f.mustApply(node("n1"), vol("x", "ReadWriteMany"), wl("w1", "n1", "x"))
	_, err := f.apply(vol("y", ""), node("n3"), vol("x", "ReadWriteOnce"))
	wantCode(t, err, codes.InvalidArgument, `volume "x"`)
	for _, want := range []string{"ReadWriteMany", "ReadWriteOnce", "delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, ok, _ := f.store.Volume("y"); ok {
		t.Error("volume y stored by a refused apply")
	}
	if v, _, _ := f.store.Volume("x"); v.Mode != cloud.MultiNode {
		t.Errorf("stored mode of x changed to %v", v.Mode)
	}
	f.wantNoDisk("y")
	f.wantNoInstance("n3")
	if mode, _, _ := f.cloud.Volume("x"); mode != cloud.MultiNode {
		t.Errorf("disk x is %v", mode)
	}
	if got := f.shownMode("x"); got != "ReadWriteMany" {
		t.Errorf("get shows %q", got)
	}
	// ReadOnlyMany is a mode of its own, not ReadWriteMany's other name.
	_, err = f.apply(vol("x", "ReadOnlyMany"))
	wantCode(t, err, codes.InvalidArgument, `volume "x" is ReadWriteMany and cannot become ReadOnlyMany`)
	if v, _, _ := f.store.Volume("x"); v.ReadOnly {
		t.Error("x became read-only")
	}
}

// Leftovers of a killed apply (a disk created and tagged uncommitted, the
// process killed before the commit) are adopted by the next apply: the
// same mode is reused, a wrong mode is recreated unless the disk is
// attached. A deleted volume's disk (untagged: it may hold data) is never
// deleted.
func TestLeftoverDiskOfKilledApply(t *testing.T) {
	t.Run("right mode reused", func(t *testing.T) {
		f := newFixture(t)
		f.cloud.CreateVolume("x", cloud.MultiNode)
		rec := f.recording(f.cloud)
		if _, err := rec.svc.Apply(f.ctx(""), applyReq(vol("x", "ReadWriteMany"), node("n1"))); err != nil {
			t.Fatal(err)
		}
		f.wantDisk("x", cloud.MultiNode)
		if d, i := rec.deletes(); len(d)+len(i) != 0 {
			t.Fatalf("deleted volumes %v, instances %v; want nothing deleted", d, i)
		}
	})
	t.Run("wrong mode recreated", func(t *testing.T) {
		f := newFixture(t)
		if err := f.cloud.CreateVolumeUncommitted("x", cloud.Exclusive); err != nil {
			t.Fatal(err)
		}
		got := f.mustApply(vol("x", "ReadWriteMany"))
		if !slices.Equal(got, []string{"volume/x created"}) {
			t.Fatalf("applied %v", got)
		}
		f.wantDisk("x", cloud.MultiNode)
		if got := f.shownMode("x"); got != "ReadWriteMany" {
			t.Fatalf("get shows %q", got)
		}
		if f.cloud.Uncommitted("x") {
			t.Fatal("the disk of a committed apply is still tagged uncommitted")
		}
	})
	t.Run("a deleted volume's disk is never deleted", func(t *testing.T) {
		f := newFixture(t)
		f.mustApply(vol("x", "ReadWriteOnce"))
		if f.cloud.Uncommitted("x") {
			t.Fatal("the disk of a committed apply is still tagged uncommitted")
		}
		if _, err := f.client().Delete(f.ctx(f.token), &messages.DeleteRequest{Kind: "volume", Name: "x"}); err != nil {
			t.Fatal(err)
		}
		rec := f.recording(f.cloud)
		_, err := rec.svc.Apply(f.ctx(""), applyReq(vol("x", "ReadWriteMany")))
		wantCode(t, err, codes.InvalidArgument, `volume "x"`)
		for _, want := range []string{"deleted volume", "ReadWriteOnce", "may hold", "never deletes"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if d, _ := rec.deletes(); len(d) != 0 {
			t.Fatalf("deleted disks %v", d)
		}
		f.wantDisk("x", cloud.Exclusive)
	})
	t.Run("wrong mode attached refused", func(t *testing.T) {
		f := newFixture(t)
		f.cloud.CreateVolume("x", cloud.Exclusive)
		inst, _ := f.cloud.InstanceOf("n1")
		if _, err := f.cloud.Attach(f.ctx(""), "x", inst); err != nil {
			t.Fatal(err)
		}
		_, err := f.apply(vol("x", "ReadWriteMany"))
		wantCode(t, err, codes.InvalidArgument, `volume "x"`)
		for _, want := range []string{"ReadWriteOnce", "attached", string(inst)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		f.nothingStored()
		f.wantDisk("x", cloud.Exclusive, inst)
	})
}

// A volume already desired whose disk has another mode (data of an older
// tether) is refused clearly, and get shows the disk's mode, not the
// desired one.
func TestDesiredModeDisagreesWithDisk(t *testing.T) {
	f := newFixture(t)
	if err := f.store.Apply([]store.Op{{PutVolume: &store.VolumeSpec{ID: "x", Mode: cloud.MultiNode}}}); err != nil {
		t.Fatal(err)
	}
	f.cloud.CreateVolume("x", cloud.Exclusive)
	_, err := f.apply(vol("x", "ReadWriteMany"))
	wantCode(t, err, codes.InvalidArgument, `volume "x"`)
	for _, want := range []string{"disk", "ReadWriteOnce", "delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	f.wantDisk("x", cloud.Exclusive)
	shown := f.shownMode("x")
	if !strings.HasPrefix(shown, "ReadWriteOnce") || !strings.Contains(shown, "ReadWriteMany") {
		t.Fatalf("get shows %q, want the disk's ReadWriteOnce and a warning naming the desired ReadWriteMany", shown)
	}
}

// A commit that fails removes the disks and instances the apply created,
// and keeps those it adopted.
func TestFailedCommitRemovesWhatItCreated(t *testing.T) {
	f := newFixture(t)
	f.cloud.CreateVolume("old", cloud.MultiNode)
	n1, _ := f.cloud.InstanceOf("n1")
	f.store.FailApplies(1)
	_, err := f.apply(node("n1"), node("n7"), vol("old", "ReadWriteMany"), vol("new", ""))
	wantCode(t, err, codes.Internal, "injected")
	f.nothingStored()
	f.wantNoDisk("new")
	f.wantNoInstance("n7")
	f.wantDisk("old", cloud.MultiNode)
	if inst, ok := f.cloud.InstanceOf("n1"); !ok || inst != n1 {
		t.Fatalf("adopted instance of n1 = %v %v, want %s", inst, ok, n1)
	}
}

// Provisioning that fails half-way removes what it created before.
func TestFailedProvisioningRemovesWhatItCreated(t *testing.T) {
	f := newFixture(t)
	rec := f.recording(f.cloud)
	rec.failCreate = "b"
	_, err := rec.svc.Apply(f.ctx(""), applyReq(node("n7"), vol("a", ""), vol("b", "")))
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	f.nothingStored()
	f.wantNoDisk("a")
	f.wantNoDisk("b")
	f.wantNoInstance("n7")
}

// An apply creates its disks with one batch and commits them with another,
// whatever their number; the left-over disk it recreates is in the batch.
func TestApplyCreatesDisksInOneBatch(t *testing.T) {
	f := newFixture(t)
	if err := f.cloud.CreateVolumeUncommitted("left", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	f.cloud.CreateVolume("kept", cloud.MultiNode)
	rec := f.recording(f.cloud)
	docs := []*messages.Document{vol("left", "ReadWriteMany"), vol("kept", "ReadWriteMany")}
	var want []cloud.VolumeID
	for i := range 20 {
		id := fmt.Sprintf("v%02d", i)
		docs = append(docs, vol(id, ""))
		want = append(want, cloud.VolumeID(id))
	}
	if _, err := rec.svc.Apply(f.ctx(""), applyReq(docs...)); err != nil {
		t.Fatal(err)
	}
	create := append([]cloud.VolumeID{"left"}, want...)
	if got := rec.batches; len(got) != 2 || !slices.Equal(got[0], create) || !slices.Equal(got[1], create) {
		t.Fatalf("batches %v, want one creating and one committing %v", got, create)
	}
	// The disks were read in one call, none of them one by one.
	if rec.disksCalls != 1 || rec.perDisk.Load() != 0 {
		t.Fatalf("the apply read the disks in %d Disks calls and %d Volume or Uncommitted calls; want 1 and 0", rec.disksCalls, rec.perDisk.Load())
	}
	f.wantDisk("left", cloud.MultiNode)
	for _, id := range create {
		if f.cloud.Uncommitted(id) {
			t.Errorf("disk %s still tagged uncommitted", id)
		}
	}
}

// Without a DiskReader the disks are read one by one, with the same
// outcome.
func TestApplyReadsDisksOneByOneWithoutDiskReader(t *testing.T) {
	f := newFixture(t)
	if err := f.cloud.CreateVolumeUncommitted("left", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	rec := f.recording(f.cloud)
	rec.svc.nodes = oneByOne{rec}
	if _, err := rec.svc.Apply(f.ctx(""), applyReq(vol("left", "ReadWriteMany"), vol("a", ""))); err != nil {
		t.Fatal(err)
	}
	if rec.disksCalls != 0 || rec.perDisk.Load() == 0 {
		t.Fatalf("%d Disks calls, %d Volume or Uncommitted calls; want none and some", rec.disksCalls, rec.perDisk.Load())
	}
	f.wantDisk("left", cloud.MultiNode)
	for _, id := range []cloud.VolumeID{"left", "a"} {
		if f.cloud.Uncommitted(id) {
			t.Errorf("disk %s still tagged uncommitted", id)
		}
	}
}

// A cloud service from before Disks (its Disks unsupported): the apply
// asks disk by disk, with the same outcome.
func TestApplyReadsDisksOneByOneFromAnOlderCloud(t *testing.T) {
	f := newFixture(t)
	if err := f.cloud.CreateVolumeUncommitted("left", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	rec := f.recording(f.cloud)
	rec.disksUnsupported = true
	if _, err := rec.svc.Apply(f.ctx(""), applyReq(vol("left", "ReadWriteMany"), vol("a", ""))); err != nil {
		t.Fatal(err)
	}
	if rec.disksCalls != 1 || rec.perDisk.Load() == 0 {
		t.Fatalf("%d Disks calls, %d Volume or Uncommitted calls; want one refused and then some", rec.disksCalls, rec.perDisk.Load())
	}
	f.wantDisk("left", cloud.MultiNode)
	for _, id := range []cloud.VolumeID{"left", "a"} {
		if f.cloud.Uncommitted(id) {
			t.Errorf("disk %s still tagged uncommitted", id)
		}
	}
}

// oneByOne hides recordingNodes' Disks (cloud.Provisioner only).
type oneByOne struct{ cloud.Provisioner }

func applyReq(docs ...*messages.Document) *messages.ApplyRequest {
	return &messages.ApplyRequest{Documents: docs}
}

// recordingNodes is the sim cloud that records deletions and can fail the
// creation of the disks of a batch naming one volume.
type recordingNodes struct {
	*sim.Cloud
	svc        *service
	failCreate cloud.VolumeID
	mu         sync.Mutex
	vols       []cloud.VolumeID
	insts      []cloud.InstanceID
	batches    [][]cloud.VolumeID // CreateVolumesUncommitted, then CommitVolumes calls
	disksCalls int                // Disks calls
	// disksUnsupported: Disks answers as a cloud service from before it.
	disksUnsupported bool
	perDisk          atomic.Int64 // Volume and Uncommitted calls
}

func (r *recordingNodes) Disks(ids []cloud.VolumeID) (map[cloud.VolumeID]cloud.Disk, error) {
	r.mu.Lock()
	r.disksCalls++
	r.mu.Unlock()
	if r.disksUnsupported {
		return nil, fmt.Errorf("%w: no Disks here", errors.ErrUnsupported)
	}
	return r.Cloud.Disks(ids)
}

func (r *recordingNodes) Volume(id cloud.VolumeID) (cloud.AccessMode, []cloud.InstanceID, bool) {
	r.perDisk.Add(1)
	return r.Cloud.Volume(id)
}

func (r *recordingNodes) Uncommitted(id cloud.VolumeID) bool {
	r.perDisk.Add(1)
	return r.Cloud.Uncommitted(id)
}

// recording returns a service over f's controller and c, recorded.
func (f *fixture) recording(c *sim.Cloud) *recordingNodes {
	r := &recordingNodes{Cloud: c}
	r.svc = &service{ctl: f.ctl, nodes: r}
	return r
}

func (r *recordingNodes) CreateVolumesUncommitted(vols []cloud.VolumeSpec) error {
	var ids []cloud.VolumeID
	for _, v := range vols {
		ids = append(ids, v.ID)
	}
	r.record(ids)
	for _, v := range vols {
		if v.ID == r.failCreate {
			return errors.New("injected create failure")
		}
	}
	return r.Cloud.CreateVolumesUncommitted(vols)
}

func (r *recordingNodes) CommitVolumes(ids []cloud.VolumeID) error {
	r.record(ids)
	return r.Cloud.CommitVolumes(ids)
}

func (r *recordingNodes) record(batch []cloud.VolumeID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(batch))
}

func (r *recordingNodes) DeleteVolume(id cloud.VolumeID) error {
	r.mu.Lock()
	r.vols = append(r.vols, id)
	r.mu.Unlock()
	return r.Cloud.DeleteVolume(id)
}

func (r *recordingNodes) Delete(inst cloud.InstanceID) error {
	r.mu.Lock()
	r.insts = append(r.insts, inst)
	r.mu.Unlock()
	return r.Cloud.Delete(inst)
}

func (r *recordingNodes) deletes() ([]cloud.VolumeID, []cloud.InstanceID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vols), slices.Clone(r.insts)
}

func TestPlanVolume(t *testing.T) {
	rwo := store.VolumeSpec{ID: "x", Mode: cloud.Exclusive}
	rwx := store.VolumeSpec{ID: "x", Mode: cloud.MultiNode}
	rox := store.VolumeSpec{ID: "x", Mode: cloud.MultiNode, ReadOnly: true}
	roDisk := disk{exists: true, mode: cloud.MultiNode, readOnly: true} // as a cloud that says (cloud.ReadOnlyDisks)
	for _, tt := range []struct {
		name    string
		asked   store.VolumeSpec
		desired *store.VolumeSpec
		disk    disk
		want    stepKind // 0: nothing to do
		refusal []string // parts of the refusal, if refused
	}{
		{"new volume, no disk", rwx, nil, disk{}, createDisk, nil},
		{"desired volume, disk missing", rwx, &rwx, disk{}, createDisk, nil},
		{"desired volume, disk right", rwx, &rwx, disk{exists: true, mode: cloud.MultiNode}, 0, nil},
		{"leftover, right mode, attached", rwo, nil, disk{exists: true, mode: cloud.Exclusive, attached: []cloud.InstanceID{"i-1"}}, 0, nil},
		{"leftover of a killed apply, wrong mode, detached", rwx, nil, disk{exists: true, mode: cloud.Exclusive, uncommitted: true}, recreateDisk, nil},
		{"deleted volume's disk, wrong mode, detached", rwx, nil, disk{exists: true, mode: cloud.Exclusive}, 0,
			[]string{`volume "x"`, "deleted volume", "ReadWriteOnce", "never deletes"}},
		{"leftover, wrong mode, attached", rwx, nil, disk{exists: true, mode: cloud.Exclusive, attached: []cloud.InstanceID{"i-1"}}, 0,
			[]string{`volume "x"`, "ReadWriteOnce", "attached to [i-1]", "ReadWriteMany"}},
		{"desired volume, disk of another mode", rwx, &rwx, disk{exists: true, mode: cloud.Exclusive}, 0,
			[]string{`volume "x" is ReadWriteMany in the desired state`, "disk in the cloud is ReadWriteOnce", "delete volume/x"}},
		{"new ReadOnlyMany volume, no disk", rox, nil, disk{}, createDisk, nil},
		{"ReadOnlyMany, read-only disk", rox, &rox, roDisk, 0, nil},
		{"ReadOnlyMany, a cloud that does not say", rox, nil, disk{exists: true, mode: cloud.MultiNode, readOnly: true}, 0, nil},
		{"ReadWriteMany, deleted volume's read-only disk", rwx, nil, roDisk, 0,
			[]string{`volume "x"`, "deleted volume", "ReadOnlyMany", `apply "x" as ReadOnlyMany`}},
		{"ReadOnlyMany, deleted volume's read-write disk", rox, nil, disk{exists: true, mode: cloud.MultiNode}, 0,
			[]string{`volume "x"`, "deleted volume", "ReadWriteMany", `apply "x" as ReadWriteMany`}},
		{"ReadWriteMany, read-only leftover of a killed apply", rwx, nil, disk{exists: true, mode: cloud.MultiNode, readOnly: true, uncommitted: true}, recreateDisk, nil},
		{"ReadOnlyMany, exclusive leftover attached", rox, nil, disk{exists: true, mode: cloud.Exclusive, attached: []cloud.InstanceID{"i-1"}}, 0,
			[]string{"ReadWriteOnce and attached to [i-1]", "cannot become ReadOnlyMany"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := planVolume(tt.asked, tt.desired, tt.disk)
			if tt.refusal != nil {
				if !errors.Is(err, controller.ErrInvalid) || st != nil {
					t.Fatalf("= %v, %v; want a refusal", st, err)
				}
				for _, p := range tt.refusal {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("%q does not mention %q", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got stepKind
			if st != nil {
				got = st.kind
				if st.vol != tt.asked.ID || st.mode != tt.asked.Mode || st.readOnly != tt.asked.ReadOnly {
					t.Errorf("step %+v, want volume %s mode %v read-only %v", st, tt.asked.ID, tt.asked.Mode, tt.asked.ReadOnly)
				}
			}
			if got != tt.want {
				t.Fatalf("step kind %v, want %v", got, tt.want)
			}
		})
	}
}
