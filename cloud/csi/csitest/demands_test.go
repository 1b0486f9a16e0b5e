package csitest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// A volume's volume_context: given with VolumeContext, returned by
// CreateVolume (again when asked again), ControllerGetVolume and
// VolumeContext; none without.
func TestVolumeContextGiven(t *testing.T) {
	for _, on := range []bool{false, true} {
		d := New(Config{VolumeContext: on, GetVolume: true})
		d.AddVolume("added")
		p := serve(t, d, "")
		want := func(id string) map[string]string {
			if !on {
				return nil
			}
			return map[string]string{VolumeContextKey: "share-" + id}
		}
		for range 2 {
			r, err := p.ctl.CreateVolume(t.Context(), &spec.CreateVolumeRequest{Name: "new",
				VolumeCapabilities: []*spec.VolumeCapability{mount("ext4")}})
			if err != nil || r.GetVolume().GetVolumeId() != "vol-1" || !maps.Equal(r.GetVolume().GetVolumeContext(), want("vol-1")) {
				t.Errorf("VolumeContext %v: CreateVolume = %v, %v, want volume_context %v", on, r, err, want("vol-1"))
			}
		}
		for _, id := range []string{"vol-1", "added"} {
			if got := d.VolumeContext(id); !maps.Equal(got, want(id)) || (got == nil) != !on {
				t.Errorf("VolumeContext %v: VolumeContext(%s) = %v, want %v", on, id, got, want(id))
			}
			g, err := p.ctl.ControllerGetVolume(t.Context(), &spec.ControllerGetVolumeRequest{VolumeId: id})
			if err != nil || !maps.Equal(g.GetVolume().GetVolumeContext(), want(id)) {
				t.Errorf("VolumeContext %v: ControllerGetVolume(%s) = %v, %v", on, id, g, err)
			}
		}
		if got := d.VolumeContext("nope"); got != nil {
			t.Errorf("an unknown volume's context: %v", got)
		}
	}
}

// step is one call of a chain: it sends the use it is given.
type step struct {
	method string
	call   func(use) error
}

// chain is the calls that bring vol to p's node, in order.
func chain(t *testing.T, p plugin, vol string) []step {
	dir := t.TempDir()
	var pc map[string]string
	return []step{
		{"ControllerPublishVolume", func(u use) (err error) { pc, err = p.publish(t, vol, u); return err }},
		{"NodeStageVolume", func(u use) error { return p.stage(t, vol, dir, pc, u) }},
		{"NodePublishVolume", func(u use) error { return p.nodePublish(t, vol, dir, dir+"/target", pc, u) }},
	}
}

// With RequireVolumeContext, ControllerPublishVolume, NodeStageVolume and
// NodePublishVolume take a volume only with its volume_context, exactly.
func TestVolumeContextRequired(t *testing.T) {
	d := New(Config{Nodes: map[string]int64{"node-1": 0}, StageUnstage: true, RequireVolumeContext: true})
	d.AddVolume("v")
	p := serve(t, d, "node-1")
	right := d.VolumeContext("v")
	if right == nil {
		t.Fatal("RequireVolumeContext gives no volume_context")
	}
	wrong := map[string]string{VolumeContextKey: "share-w"}
	more := map[string]string{VolumeContextKey: "share-v", "extra": "x"}
	for _, st := range chain(t, p, "v") {
		for _, tc := range []struct {
			name string
			vctx map[string]string
			want codes.Code
		}{
			{"none", nil, codes.InvalidArgument},
			{"wrong", wrong, codes.InvalidArgument},
			{"more", more, codes.InvalidArgument},
			{"right", right, codes.OK},
		} {
			err := st.call(use{cap: mount("ext4"), vctx: tc.vctx})
			wantCode(t, st.method+" with "+tc.name+" volume_context", err, tc.want)
			if tc.want != codes.OK && !strings.Contains(err.Error(), "volume_context") {
				t.Errorf("%s: %q does not say what is wrong", st.method, err)
			}
		}
	}
	if got := d.Targets("v", "node-1"); len(got) != 1 {
		t.Errorf("v is published at %v", got)
	}
}

// With RequireSecrets, ControllerPublishVolume, NodeStageVolume,
// NodePublishVolume and ControllerUnpublishVolume take a request only with
// those secrets; no value shows in an error or a Call.
func TestSecretsRequired(t *testing.T) {
	d := New(Config{Nodes: map[string]int64{"node-1": 0}, StageUnstage: true, RequireSecrets: map[string]string{"token": "s3cret"}})
	d.AddVolume("v")
	p := serve(t, d, "node-1")
	steps := append(chain(t, p, "v"), step{"ControllerUnpublishVolume", func(u use) error { return p.unpublish(t, "v", u) }})
	for _, st := range steps {
		for _, tc := range []struct {
			name    string
			secrets map[string]string
			want    codes.Code
		}{
			{"none", nil, codes.InvalidArgument},
			{"another key", map[string]string{"user": "s3cret"}, codes.InvalidArgument},
			{"wrong value", map[string]string{"token": "guess"}, codes.InvalidArgument},
			{"right, and more", map[string]string{"token": "s3cret", "user": "me"}, codes.OK},
		} {
			err := st.call(use{cap: mount("ext4"), secrets: tc.secrets})
			wantCode(t, st.method+" with "+tc.name+" secrets", err, tc.want)
			if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "guess")) {
				t.Errorf("%s: %q shows a secret", st.method, err)
			}
		}
	}
	if got := d.PublishedTo("v"); got != nil {
		t.Errorf("v is still published to %v", got)
	}
	wantKeys := [][]string{nil, {"user"}, {"token"}, {"token", "user"}}
	for i, c := range d.Calls() {
		if s := fmt.Sprintf("%#v %s", c, c); strings.Contains(s, "s3cret") || strings.Contains(s, "guess") {
			t.Errorf("call %d shows a secret: %s", i, s)
		}
		if !slices.Equal(c.SecretKeys, wantKeys[i%4]) {
			t.Errorf("call %d (%s): secret keys %q, want %q", i, c.Method, c.SecretKeys, wantKeys[i%4])
		}
	}
}
