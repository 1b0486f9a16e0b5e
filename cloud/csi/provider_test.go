package csi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

func TestAttachDetachRoundTrip(t *testing.T) {
	r := newRig(t, listByPage())
	ctx := t.Context()
	r.d.AddVolume("v1")

	dev, err := r.p.Attach(ctx, "v1", id1)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := PublishContext(dev)
	if want := map[string]string{"devicePath": "/dev/fake0", "volume": "v1"}; err != nil || !maps.Equal(pc, want) {
		t.Errorf("publish context of %q = %v, %v; want %v", dev, pc, err, want)
	}
	if got := r.d.PublishedTo("v1"); !slices.Equal(got, []string{"node-1"}) {
		t.Errorf("published to %v", got)
	}
	again, err := r.p.Attach(ctx, "v1", id1)
	if err != nil || again != dev {
		t.Errorf("second Attach = %q, %v; want %q (idempotent)", again, err, dev)
	}
	got, err := r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1})
	if want := map[cloud.VolumeID]string{"v1": dev}; err != nil || !maps.Equal(got[id1], want) {
		t.Errorf("InstanceVolumes = %v, %v; want %v", got, err, want)
	}

	if err := r.p.Detach(ctx, "v1", id1); err != nil {
		t.Fatal(err)
	}
	if got := r.d.PublishedTo("v1"); len(got) != 0 {
		t.Errorf("published to %v after Detach", got)
	}
	for _, vol := range []cloud.VolumeID{"v1", "no-such-volume"} {
		if err := r.p.Detach(ctx, vol, id1); err != nil {
			t.Errorf("Detach(%s) again = %v, want nil (idempotent)", vol, err)
		}
	}
	got, err = r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1})
	if m, ok := got[id1]; err != nil || !ok || len(m) != 0 {
		t.Errorf("InstanceVolumes after Detach = %v, %v; want node-1 with nothing", got, err)
	}
}

// A driver that answers NOT_FOUND to an unpublish (older spec versions
// did, for an unknown volume or node) has nothing published: done.
func TestDetachNotFoundIsDone(t *testing.T) {
	cfg := listByPage()
	cfg.Before = func(_ context.Context, m string) error {
		if m == "ControllerUnpublishVolume" {
			return status.Error(codes.NotFound, "no such node")
		}
		return nil
	}
	r := newRig(t, cfg)
	if err := r.p.Detach(t.Context(), "v1", "gone"); err != nil {
		t.Errorf("Detach = %v, want nil", err)
	}
}

func TestAttachRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   csitest.Config
		setup func(*testing.T, *rig) // attaches made first, through the Provider
		vol   cloud.VolumeID
		inst  cloud.InstanceID
		want  cloud.Kind
		text  string // of the driver, kept in the error
	}{
		{name: "exclusive volume attached elsewhere", cfg: listByPage(),
			setup: attach("a", id1), vol: "a", inst: id2, want: cloud.KindAttachedElsewhere, text: "published to node node-1"},
		{name: "multi-node volume on a second node", cfg: listByPage(),
			setup: attach("m", id1), vol: "m", inst: id2, want: cloud.KindNone},
		{name: "multi-attach disk accepts an exclusive volume twice (second line of defence only)",
			cfg:   csitest.Config{List: true, ListPublished: true, MultiAttach: true},
			setup: attach("a", id1), vol: "a", inst: id2, want: cloud.KindNone},
		{name: "node limit reached", cfg: csitest.Config{List: true, ListPublished: true, Nodes: map[string]int64{"node-1": 2, "node-2": 0}},
			setup: both(attach("a", id1), attach("b", id1)), vol: "c", inst: id1, want: cloud.KindLimitReached, text: "has its 2 volumes"},
		{name: "limit is per node", cfg: csitest.Config{List: true, ListPublished: true, Nodes: map[string]int64{"node-1": 2, "node-2": 0}},
			setup: both(attach("a", id1), attach("b", id1)), vol: "c", inst: id2, want: cloud.KindNone},
		{name: "no such volume", cfg: listByPage(), vol: "nope", inst: id1, want: cloud.KindNotFound, text: "no volume nope"},
		{name: "no such node", cfg: listByPage(), vol: "a", inst: "node-9", want: cloud.KindNotFound, text: "no node node-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes := func(_ context.Context, v cloud.VolumeID) (Access, error) {
				if strings.HasPrefix(string(v), "m") {
					return Access{Mode: cloud.MultiNode}, nil
				}
				return Access{Mode: cloud.Exclusive}, nil
			}
			r := newRig(t, tc.cfg, WithAccessModes(modes))
			for _, v := range []string{"a", "b", "c", "m"} {
				r.d.AddVolume(v)
			}
			if tc.setup != nil {
				tc.setup(t, r)
			}
			_, err := r.p.Attach(t.Context(), tc.vol, tc.inst)
			if got := cloud.Classify(err); got != tc.want {
				t.Fatalf("Attach = %v (%v), want %v", err, got, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q lacks the driver's %q", err, tc.text)
			}
		})
	}
}

// attach is a setup step: Attach through the Provider, which must work.
func attach(vol cloud.VolumeID, inst cloud.InstanceID) func(*testing.T, *rig) {
	return func(t *testing.T, r *rig) {
		t.Helper()
		if _, err := r.p.Attach(t.Context(), vol, inst); err != nil {
			t.Fatalf("setup: Attach(%s, %s): %v", vol, inst, err)
		}
	}
}

func both(a, b func(*testing.T, *rig)) func(*testing.T, *rig) {
	return func(t *testing.T, r *rig) { a(t, r); b(t, r) }
}

func TestAccessModeLookupFails(t *testing.T) {
	r := newRig(t, listByPage(), WithAccessModes(func(context.Context, cloud.VolumeID) (Access, error) {
		return Access{}, context.DeadlineExceeded // a store that timed out
	}))
	r.d.AddVolume("a")
	_, err := r.p.Attach(t.Context(), "a", id1)
	if cloud.Classify(err) != cloud.KindRetryable || strings.Contains(fmt.Sprint(err), "outcome unknown") {
		t.Errorf("Attach = %v, want retryable", err)
	}
	// Nothing was sent, so it is no context error ("may have landed").
	if isContextErr(err) || r.c.get("ControllerPublishVolume") != 0 {
		t.Errorf("Attach = %v after %d sends; want a plain retryable error and nothing sent", err, r.c.get("ControllerPublishVolume"))
	}
}

func TestNodeRegistry(t *testing.T) {
	r := newRig(t, listByPage())
	ctx := t.Context()
	if id, err := r.p.InstanceID(ctx, "n1"); err != nil || id != id1 {
		t.Errorf("InstanceID(n1) = %q, %v", id, err)
	}
	if _, err := r.p.InstanceID(ctx, "n3"); cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("InstanceID(n3) = %v, want not found", err)
	}
	if err := r.p.SetNodeID("n3", id1); cloud.Classify(err) != cloud.KindTerminal {
		t.Errorf("SetNodeID(n3, n1's ID) = %v, want refused", err)
	}
	if err := r.p.SetNodeID("n3", ""); err == nil {
		t.Error("SetNodeID(n3, \"\") accepted")
	}

	// n1 is replaced: its plugin reports a new ID. The old one is no live
	// instance any more (InstanceVolumes leaves it out), though the
	// driver keeps what is published to it.
	r.d.AddVolume("a")
	attach("a", id1)(t, r)
	if err := r.p.SetNodeID("n1", "node-1b"); err != nil {
		t.Fatal(err)
	}
	if id, _ := r.p.InstanceID(ctx, "n1"); id != "node-1b" {
		t.Errorf("InstanceID(n1) = %q after SetNodeID", id)
	}
	got, err := r.p.InstanceVolumes(ctx, []cloud.InstanceID{id1, "node-1b"})
	if _, old := got[id1]; err != nil || old || len(got["node-1b"]) != 0 {
		t.Errorf("InstanceVolumes = %v, %v; want node-1b empty and node-1 absent", got, err)
	}
	if err := r.p.SetNodeID("n3", id1); err != nil {
		t.Errorf("SetNodeID(n3, a free ID) = %v", err)
	}
	r.p.ForgetNode("n3")
	if _, err := r.p.InstanceID(ctx, "n3"); cloud.Classify(err) != cloud.KindNotFound {
		t.Errorf("InstanceID(n3) after ForgetNode = %v", err)
	}
}
