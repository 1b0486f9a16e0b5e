package csi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// A raw block volume asks for access type Block (no file system, no
// flags); a mounted one for Mount with its own file system, else the
// configured one, else ext4, and its flags.
func TestCapabilityBlockAndMount(t *testing.T) {
	b := Capability(Access{Mode: cloud.Exclusive, Block: true, FsType: "xfs", MountFlags: []string{"x"}}, "btrfs")
	if b.GetBlock() == nil || b.GetMount() != nil {
		t.Errorf("block: %v", b)
	}
	for _, tc := range []struct {
		a      Access
		fs     string
		wantFs string
	}{
		{Access{FsType: "xfs", MountFlags: []string{"noatime", "nodev"}}, "btrfs", "xfs"},
		{Access{}, "btrfs", "btrfs"},
		{Access{}, "", DefaultFsType},
	} {
		c := Capability(tc.a, tc.fs)
		if c.GetBlock() != nil || c.GetMount().GetFsType() != tc.wantFs || !slices.Equal(c.GetMount().GetMountFlags(), tc.a.MountFlags) {
			t.Errorf("Capability(%#v, %q) = %v", tc.a, tc.fs, c)
		}
	}
	flags := []string{"a"}
	c := Capability(Access{MountFlags: flags}, "")
	flags[0] = "changed"
	if c.GetMount().GetMountFlags()[0] != "a" {
		t.Error("the capability shares the access's flags")
	}
}

// No way of printing an Access or its secrets shows a secret.
func TestAccessPrintsNoSecret(t *testing.T) {
	a := Access{Mode: cloud.Exclusive, Block: true, Secrets: Secrets{"password": "hunter2"}}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, x := range []any{a, a.Secrets, &a} {
			if s := fmt.Sprintf(f, x); strings.Contains(s, "hunter2") {
				t.Errorf("%s of %T shows the secret: %s", f, x, s)
			}
		}
	}
	if s := fmt.Sprintf("%v", a); s != "SINGLE_NODE_WRITER, block" {
		t.Errorf("%%v = %q", s)
	}
}

// The volume's volume_context and secrets go with every call that takes
// them, its block or mount capability with every call that takes one:
// the driver demands them all, and answers only if they are right.
func TestCallsCarryContextAndSecrets(t *testing.T) {
	secrets := map[string]string{"user": "u", "password": "hunter2"}
	cfg := listByPage()
	cfg.RequireVolumeContext, cfg.RequireSecrets, cfg.BlockOnly = true, secrets, true
	var d *csitest.Driver
	access := func(_ context.Context, v cloud.VolumeID) (Access, error) {
		return Access{Mode: cloud.Exclusive, Block: true, VolumeContext: d.VolumeContext(string(v)), Secrets: secrets}, nil
	}
	r := newRig(t, cfg, WithAccessModes(access))
	d = r.d
	r.d.AddVolume("v1")
	ctx := t.Context()
	a, _ := access(ctx, "v1")
	if err := r.p.Validate(ctx, "v1", a); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Attach(ctx, "v1", id1); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Detach(ctx, "v1", id1); err != nil {
		t.Fatal(err)
	}
	want := r.d.VolumeContext("v1")
	for _, c := range r.d.Calls() {
		if c.Volume != "v1" {
			continue
		}
		if !slices.Equal(c.SecretKeys, []string{"password", "user"}) {
			t.Errorf("%s sent secrets %v", c.Method, c.SecretKeys)
		}
		if c.Method != "ControllerUnpublishVolume" && (!maps.Equal(c.VolumeContext, want) || !c.Block) {
			t.Errorf("%s sent %+v, want volume_context %v and a block capability", c.Method, c, want)
		}
	}
	if n := r.d.Count("ControllerUnpublishVolume", "v1"); n != 1 || len(r.d.PublishedTo("v1")) != 0 {
		t.Errorf("%d ControllerUnpublishVolume, published to %v", n, r.d.PublishedTo("v1"))
	}
}

// A detach whose secrets cannot be read is sent all the same, without
// them: a driver that needs none unpublishes; one that needs them
// refuses, and the error says why they were missing. An attach is not
// sent at all.
func TestDetachWithoutSecrets(t *testing.T) {
	unreadable := errors.New("secrets file /d/csi-secrets/s.json has mode 0644")
	access := func(context.Context, cloud.VolumeID) (Access, error) { return Access{}, unreadable }
	for _, need := range []bool{false, true} {
		cfg := listByPage()
		if need {
			cfg.RequireSecrets = map[string]string{"k": "v"}
		}
		r := newRig(t, cfg, WithAccessModes(access))
		r.d.AddVolume("v1")
		r.d.Publish("v1", string(id1))
		if _, err := r.p.Attach(t.Context(), "v1", id1); err == nil || !strings.Contains(err.Error(), "mode 0644") || cloud.Classify(err) != cloud.KindRetryable {
			t.Errorf("Attach = %v, want retryable, naming the mode", err)
		}
		if n := r.d.Count("ControllerPublishVolume", ""); n != 0 {
			t.Errorf("%d ControllerPublishVolume sent without the volume's secrets", n)
		}
		err := r.p.Detach(t.Context(), "v1", id1)
		if n := r.d.Count("ControllerUnpublishVolume", "v1"); n != 1 {
			t.Errorf("need %v: %d ControllerUnpublishVolume, want 1", need, n)
		}
		switch {
		case !need && err != nil:
			t.Errorf("Detach = %v, want nil", err)
		case need && (err == nil || !strings.Contains(err.Error(), "sent without the volume's secrets: reading them failed: secrets file /d/csi-secrets/s.json has mode 0644")):
			t.Errorf("Detach = %v, want the driver's refusal and why the secrets were missing", err)
		}
	}
}
