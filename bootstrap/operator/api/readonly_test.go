package api

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// ReadOnlyMany comes back as ReadOnlyMany: get and describe name the
// mode applied, the store keeps it apart from ReadWriteMany, a re-apply
// is unchanged and a change to ReadWriteMany is refused as any change of
// mode. The workload that uses it is shown as applied (it is published
// read-only whatever it asks: the controller's tests).
func TestReadOnlyManyRoundTrip(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.client(), f.ctx(f.token)
	got := f.mustApply(node("n1"), vol("r", "ReadOnlyMany"), vol("w", "ReadWriteMany"), wl("app", "n1", "r"))
	if !slices.Equal(got, []string{"node/n1 created", "volume/r created", "volume/w created", "workload/app created"}) {
		t.Fatalf("applied %v", got)
	}
	if got := f.shownMode("r"); got != "ReadOnlyMany" {
		t.Errorf("get volume r shows %q, want ReadOnlyMany", got)
	}
	if got := f.shownMode("w"); got != "ReadWriteMany" {
		t.Errorf("get volume w shows %q, want ReadWriteMany", got)
	}
	all, err := c.Get(ctx, &messages.GetRequest{Kind: "volumes"})
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for _, v := range all.Volumes {
		modes = append(modes, v.Spec.Name+"="+v.Spec.AccessMode)
	}
	if !slices.Equal(modes, []string{"r=ReadOnlyMany", "w=ReadWriteMany"}) {
		t.Errorf("get volumes: %v", modes)
	}
	d, err := c.Describe(ctx, &messages.DescribeRequest{Kind: "volume", Name: "r"})
	if err != nil || len(d.GetObject().GetVolumes()) != 1 || d.Object.Volumes[0].Spec.AccessMode != "ReadOnlyMany" {
		t.Fatalf("describe volume r = %v, %v; want ReadOnlyMany", d, err)
	}
	if v, _, _ := f.store.Volume("r"); v.Mode != cloud.MultiNode || !v.ReadOnly {
		t.Errorf("r stored as %+v", v)
	}
	if mode, _, ok := f.cloud.Volume("r"); !ok || mode != cloud.MultiNode {
		t.Errorf("disk r: %v, exists %v; want multi-node", mode, ok)
	}
	ws, err := c.Get(ctx, &messages.GetRequest{Kind: "workload", Name: "app"})
	if err != nil || len(ws.Workloads) != 1 || ws.Workloads[0].Spec.Volumes[0].ReadOnly {
		t.Fatalf("get workload app = %v, %v; want it as applied", ws, err)
	}

	if got := f.mustApply(vol("r", "ReadOnlyMany")); !slices.Equal(got, []string{"volume/r unchanged"}) {
		t.Errorf("re-apply: %v", got)
	}
	_, err = f.apply(vol("r", "ReadWriteMany"))
	wantCode(t, err, codes.InvalidArgument, `volume "r" is ReadOnlyMany and cannot become ReadWriteMany`)
	if got := f.shownMode("r"); got != "ReadOnlyMany" {
		t.Errorf("after a refused change get shows %q", got)
	}
}

// roNodes is the sim cloud as a cloud whose disks are read-only or not
// (cloud.ReadOnlyDisks), as the loop cloud's: it remembers the flag each disk
// was asked with.
type roNodes struct {
	*sim.Cloud
	mu       sync.Mutex
	readOnly map[cloud.VolumeID]bool
}

func (r *roNodes) CreateVolumesUncommitted(vols []cloud.VolumeSpec) error {
	if err := r.Cloud.CreateVolumesUncommitted(vols); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vols {
		if _, ok := r.readOnly[v.ID]; !ok {
			r.readOnly[v.ID] = v.ReadOnly
		}
	}
	return nil
}

func (r *roNodes) DeleteVolume(id cloud.VolumeID) error {
	if err := r.Cloud.DeleteVolume(id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.readOnly, id)
	return nil
}

func (r *roNodes) VolumeReadOnly(id cloud.VolumeID) (readOnly, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	readOnly, ok = r.readOnly[id]
	return readOnly, ok
}

// On a cloud that says which disks are read-only, the flag is part of
// the disk's mode: a ReadOnlyMany volume's disk is asked read-only, a
// deleted ReadOnlyMany volume's disk is not taken for ReadWriteMany (nor
// the reverse), and get shows the disk's flag when it disagrees.
func TestReadOnlyDisks(t *testing.T) {
	f := newFixture(t)
	nodes := &roNodes{Cloud: f.cloud, readOnly: map[cloud.VolumeID]bool{}}
	svc := &service{ctl: f.ctl, nodes: nodes}
	ctx := f.ctx("")
	apply := func(docs ...*messages.Document) ([]string, error) {
		res, err := svc.Apply(ctx, applyReq(docs...))
		return res.GetApplied(), err
	}
	shown := func(id string) string {
		t.Helper()
		res, err := svc.Get(ctx, &messages.GetRequest{Kind: "volume", Name: id})
		if err != nil || len(res.Volumes) != 1 {
			t.Fatalf("get volume %s: %v, %v", id, res, err)
		}
		return res.Volumes[0].Spec.AccessMode
	}
	if _, err := apply(vol("r", "ReadOnlyMany"), vol("w", "ReadWriteMany")); err != nil {
		t.Fatal(err)
	}
	if ro, _ := nodes.VolumeReadOnly("r"); !ro {
		t.Error("the disk of ReadOnlyMany r was not asked read-only")
	}
	if ro, _ := nodes.VolumeReadOnly("w"); ro {
		t.Error("the disk of ReadWriteMany w was asked read-only")
	}
	if got := shown("r"); got != "ReadOnlyMany" {
		t.Errorf("get r shows %q", got)
	}
	for _, id := range []string{"r", "w"} {
		if _, err := svc.Delete(ctx, &messages.DeleteRequest{Kind: "volume", Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ name, mode, disk string }{{"r", "ReadWriteMany", "ReadOnlyMany"}, {"w", "ReadOnlyMany", "ReadWriteMany"}} {
		_, err := apply(vol(tt.name, tt.mode))
		wantCode(t, err, codes.InvalidArgument, `volume "`+tt.name+`": a disk of that name is left in the cloud by a deleted volume, `+tt.disk)
		if !strings.Contains(err.Error(), "apply "+`"`+tt.name+`" as `+tt.disk) {
			t.Errorf("%q does not say to apply %s as %s", err, tt.name, tt.disk)
		}
	}
	f.nothingStored()
	if got, err := apply(vol("r", "ReadOnlyMany")); err != nil || !slices.Equal(got, []string{"volume/r created"}) {
		t.Fatalf("r applied again as ReadOnlyMany: %v, %v; want its disk adopted", got, err)
	}
	nodes.mu.Lock()
	nodes.readOnly["r"] = false // changed behind tether's back
	nodes.mu.Unlock()
	if got := shown("r"); got != "ReadWriteMany (WARNING: desired ReadOnlyMany; delete and recreate the volume)" {
		t.Errorf("a read-write disk under ReadOnlyMany r shows %q", got)
	}
}
