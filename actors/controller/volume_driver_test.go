package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
)

// A volume's driver fields are checked on their own, each error naming
// the volume and the document's field; a secretRef that could leave the
// data directory never passes.
func TestCheckVolumeDriver(t *testing.T) {
	ok := []store.VolumeSpec{
		{ID: "a"},
		{ID: "b", Block: true, VolumeAttributes: map[string]string{"csi.tether.test/share": "share-b"}, SecretRef: "creds"},
		{ID: "c", FsType: "xfs", MountOptions: []string{"noatime", "nodev"}},
	}
	for _, v := range ok {
		if err := CheckVolumeDriver(v); err != nil {
			t.Errorf("%+v: %v", v, err)
		}
	}
	for _, tt := range []struct {
		name string
		v    store.VolumeSpec
		want string
	}{
		{"block with fsType", store.VolumeSpec{ID: "v", Block: true, FsType: "ext4"}, `volume "v": fsType, mountOptions: a volumeMode Block volume is a raw device`},
		{"block with options", store.VolumeSpec{ID: "v", Block: true, MountOptions: []string{"ro"}}, "volumeMode Block"},
		{"fsType upper", store.VolumeSpec{ID: "v", FsType: "EXT4"}, `volume "v": fsType: "EXT4": only lowercase`},
		{"fsType path", store.VolumeSpec{ID: "v", FsType: "../ext4"}, "fsType"},
		{"option comma", store.VolumeSpec{ID: "v", MountOptions: []string{"ro,nodev"}}, `mountOptions: [0] "ro,nodev": a comma`},
		{"option newline", store.VolumeSpec{ID: "v", MountOptions: []string{"ok", "a\nb"}}, `mountOptions: [1]`},
		{"option NUL", store.VolumeSpec{ID: "v", MountOptions: []string{"a\x00"}}, "mountOptions: [0]"},
		{"option empty", store.VolumeSpec{ID: "v", MountOptions: []string{""}}, "must not be empty"},
		{"attribute key", store.VolumeSpec{ID: "v", VolumeAttributes: map[string]string{"": "x"}}, "csi.volumeAttributes: an empty key"},
		{"secret parent", store.VolumeSpec{ID: "v", SecretRef: "../../etc/shadow"}, `csi.secretRef: names: invalid secret name "../../etc/shadow"`},
		{"secret dotdot", store.VolumeSpec{ID: "v", SecretRef: ".."}, "csi.secretRef"},
		{"secret slash", store.VolumeSpec{ID: "v", SecretRef: "a/b"}, "csi.secretRef"},
		{"secret absolute", store.VolumeSpec{ID: "v", SecretRef: "/etc/passwd"}, "csi.secretRef"},
		{"secret NUL", store.VolumeSpec{ID: "v", SecretRef: "a\x00"}, "csi.secretRef"},
	} {
		err := CheckVolumeDriver(tt.v)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrInvalid containing %q", tt.name, err, tt.want)
		}
	}
}

// The driver fields are fixed at creation, as the access mode is: a
// change of any is refused whole, naming the fields; the same fields
// again are "unchanged", nil and empty alike.
func TestDriverFieldsFixedAtCreation(t *testing.T) {
	r := newRig(t)
	v := store.VolumeSpec{ID: "x", FsType: "xfs", MountOptions: []string{"noatime"},
		VolumeAttributes: map[string]string{"k": "v"}, SecretRef: "creds"}
	if _, err := r.ctl.ApplyAll([]Change{{Volume: &v}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		change func(*store.VolumeSpec)
		fields string
	}{
		{func(s *store.VolumeSpec) { s.FsType = "" }, "fsType cannot change"},
		{func(s *store.VolumeSpec) { s.FsType, s.MountOptions, s.Block = "", nil, true }, "volumeMode, fsType, mountOptions cannot change"},
		{func(s *store.VolumeSpec) { s.MountOptions = append(s.MountOptions, "nodev") }, "mountOptions cannot change"},
		{func(s *store.VolumeSpec) { s.VolumeAttributes = map[string]string{"k": "w"} }, "csi.volumeAttributes cannot change"},
		{func(s *store.VolumeSpec) { s.SecretRef = "other" }, "csi.secretRef cannot change"},
	} {
		c := v.Clone()
		tt.change(&c)
		batch := []Change{{Volume: &store.VolumeSpec{ID: "y"}}, {Volume: &c}}
		if _, err := r.ctl.Validate(batch); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.fields) ||
			!strings.Contains(err.Error(), "document 2") {
			t.Errorf("Validate: %v, want ErrInvalid naming document 2 and %q", err, tt.fields)
		}
		if _, err := r.ctl.ApplyAll(batch); !errors.Is(err, ErrInvalid) {
			t.Errorf("ApplyAll: %v, want ErrInvalid", err)
		}
	}
	if _, ok, _ := r.store.Volume("y"); ok {
		t.Error("y stored by a refused apply")
	}
	same := v.Clone()
	same.VolumeAttributes = map[string]string{"k": "v"}
	if got, err := r.ctl.ApplyAll([]Change{{Volume: &same}}); err != nil || !slices.Equal(got, []string{"volume/x unchanged"}) {
		t.Fatalf("re-apply: %v, %v", got, err)
	}
	bad := store.VolumeSpec{ID: "z", SecretRef: "../x"}
	if _, err := r.ctl.ApplyAll([]Change{{Volume: &bad}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("a bad secretRef: %v", err)
	}
}
