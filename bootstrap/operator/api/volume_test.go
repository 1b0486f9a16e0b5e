package api

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// driverDoc is a volume document with every driver field.
func driverDoc(name string) *messages.VolumeDoc {
	return &messages.VolumeDoc{Name: name, AccessMode: "ReadWriteOnce", VolumeMode: "Block",
		Csi: &messages.VolumeCSIDoc{VolumeAttributes: map[string]string{"csi.tether.test/share": "share-" + name}, SecretRef: "creds"}}
}

// volumeSpecOf converts a volume document, refusing only the modes that
// have no store value; the fields it does not check are the controller's
// to validate.
func TestVolumeSpecOf(t *testing.T) {
	v, err := volumeSpecOf(driverDoc("b"))
	if err != nil || !v.Block || v.SecretRef != "creds" || v.VolumeAttributes["csi.tether.test/share"] != "share-b" {
		t.Fatalf("volumeSpecOf = %+v, %v", v, err)
	}
	fs, err := volumeSpecOf(&messages.VolumeDoc{Name: "f", VolumeMode: "Filesystem", FsType: "xfs", MountOptions: []string{"noatime"}})
	if err != nil || fs.Block || fs.FsType != "xfs" || !slices.Equal(fs.MountOptions, []string{"noatime"}) {
		t.Fatalf("volumeSpecOf = %+v, %v", fs, err)
	}
	for _, tt := range []struct {
		name string
		doc  *messages.VolumeDoc
		want string
	}{
		{"mode", &messages.VolumeDoc{Name: "v", VolumeMode: "block"}, `volume "v": volumeMode: unknown mode "block" (want Filesystem or Block)`},
		{"access", &messages.VolumeDoc{Name: "v", AccessMode: "Bogus"}, "unknown access mode"},
	} {
		if _, err := volumeSpecOf(tt.doc); !errors.Is(err, controller.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrInvalid containing %q", tt.name, err, tt.want)
		}
	}
}

// An apply is validated once, by the controller (its Validate, then a
// Commit that does not validate again), with each refusal naming the
// document and field, and nothing applied.
func TestApplyValidatedOnce(t *testing.T) {
	f := newFixture(t)
	doc := func(d *messages.VolumeDoc) *messages.Document {
		return &messages.Document{Doc: &messages.Document_Volume{Volume: d}}
	}
	for _, tt := range []struct {
		name string
		doc  *messages.VolumeDoc
		want string
	}{
		{"block fsType", &messages.VolumeDoc{Name: "v", VolumeMode: "Block", FsType: "ext4"}, `document 2: controller: invalid request: volume "v": fsType, mountOptions: a volumeMode Block volume is a raw device`},
		{"fsType", &messages.VolumeDoc{Name: "v", FsType: "ext4;rm"}, `document 2: controller: invalid request: volume "v": fsType`},
		{"option", &messages.VolumeDoc{Name: "v", MountOptions: []string{"a,b"}}, `document 2: controller: invalid request: volume "v": mountOptions: [0]`},
		{"secret", &messages.VolumeDoc{Name: "v", Csi: &messages.VolumeCSIDoc{SecretRef: "../../../etc/shadow"}}, `document 2: controller: invalid request: volume "v": csi.secretRef`},
	} {
		before := f.ctl.Validations()
		_, err := f.apply(vol("plain", ""), doc(tt.doc))
		wantCode(t, err, codes.InvalidArgument, tt.want)
		if n := f.ctl.Validations() - before; n != 1 {
			t.Errorf("%s: refused after %d validations, want 1", tt.name, n)
		}
		f.nothingStored()
		f.wantNoDisk("plain")
	}
	before := f.ctl.Validations()
	f.mustApply(vol("plain", ""), vol("shared", "ReadWriteMany"))
	if n := f.ctl.Validations() - before; n != 1 {
		t.Fatalf("an apply validated %d times, want once", n)
	}
}

// A cloud that is no storage driver's (the sim) refuses driver fields:
// it would ignore them. Nothing is applied or created.
func TestDriverFieldsRefusedWithoutADriver(t *testing.T) {
	f := newFixture(t)
	_, err := f.apply(vol("plain", ""), &messages.Document{Doc: &messages.Document_Volume{Volume: driverDoc("b")}})
	wantCode(t, err, codes.InvalidArgument, `volume "b": volumeMode Block, fsType, mountOptions and csi are what a CSI driver needs`)
	f.nothingStored()
	f.wantNoDisk("plain")
	f.wantNoDisk("b")
	_, err = f.apply(&messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: "v", Csi: &messages.VolumeCSIDoc{SecretRef: "a/b"}}}})
	wantCode(t, err, codes.InvalidArgument, `document 1: controller: invalid request: volume "v": csi.secretRef: names: invalid secret name "a/b"`)
}

// driverNodes is the sim cloud as a storage driver's: it records the
// volumes ProvisionVolumes was handed.
type driverNodes struct {
	*sim.Cloud
	mu    sync.Mutex
	specs []store.VolumeSpec
}

func (d *driverNodes) ProvisionVolumes(vols []store.VolumeSpec) error {
	d.mu.Lock()
	d.specs = append(d.specs, vols...)
	d.mu.Unlock()
	disks := make([]cloud.VolumeSpec, len(vols))
	for i, v := range vols {
		disks[i] = cloud.VolumeSpec{ID: v.ID, Mode: v.Mode, ReadOnly: v.ReadOnly}
	}
	return d.Cloud.CreateVolumesUncommitted(disks)
}

// A driver's cloud is handed the new volumes whole; get shows their
// fields and the secretRef's name, nothing more; changing them is refused.
func TestDriverVolumesProvisionedWhole(t *testing.T) {
	f := newFixture(t)
	d := &driverNodes{Cloud: f.cloud}
	svc := &service{ctl: f.ctl, nodes: d}
	ctx := context.Background()
	fs := &messages.VolumeDoc{Name: "f", FsType: "xfs", MountOptions: []string{"noatime", "nodev"}}
	_, err := svc.Apply(ctx, applyReq(&messages.Document{Doc: &messages.Document_Volume{Volume: driverDoc("b")}},
		&messages.Document{Doc: &messages.Document_Volume{Volume: fs}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.specs) != 2 || !d.specs[0].Block || d.specs[0].SecretRef != "creds" || d.specs[1].FsType != "xfs" {
		t.Fatalf("ProvisionVolumes got %+v", d.specs)
	}
	res, err := svc.Get(ctx, &messages.GetRequest{Kind: "volume"})
	if err != nil || len(res.Volumes) != 2 {
		t.Fatalf("get: %v, %v", res, err)
	}
	b, f2 := res.Volumes[0].Spec, res.Volumes[1].Spec
	if b.VolumeMode != "Block" || b.Csi.GetSecretRef() != "creds" || !maps.Equal(b.Csi.GetVolumeAttributes(), driverDoc("b").Csi.VolumeAttributes) {
		t.Errorf("get b: %v", b)
	}
	if f2.VolumeMode != "Filesystem" || f2.FsType != "xfs" || !slices.Equal(f2.MountOptions, fs.MountOptions) || f2.Csi != nil {
		t.Errorf("get f: %v", f2)
	}
	changed := driverDoc("b")
	changed.Csi.SecretRef = "other"
	_, err = svc.Apply(ctx, applyReq(&messages.Document{Doc: &messages.Document_Volume{Volume: changed}}))
	if !strings.Contains(toStatus(err).Error(), "csi.secretRef cannot change") {
		t.Errorf("a changed secretRef: %v", err)
	}
}
