package csitest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// published_node_ids through one volume's life, as ControllerGetVolume and
// ListVolumes report it: the true set, or a loose driver's last node
// published on, kept for ever.
func TestPublishedNodeIDs(t *testing.T) {
	nodes := map[string]int64{"node-1": 0, "node-2": 0}
	// The stages, in order: as created; published by the controller only;
	// published on node-1 too; unpublished from both; published on node-2
	// and unpublished again.
	for _, tc := range []struct {
		name     string
		cfg      Config
		want     [5][]string
		noStatus bool // ListVolumes' entries carry none
	}{
		{name: "true set without LIST_VOLUMES_PUBLISHED_NODES", cfg: Config{Nodes: nodes, List: true, GetVolume: true},
			want: [5][]string{nil, {"node-1"}, {"node-1"}, nil, nil}, noStatus: true},
		{name: "true set", cfg: Config{Nodes: nodes, List: true, ListPublished: true, GetVolume: true},
			want: [5][]string{nil, {"node-1"}, {"node-1"}, nil, nil}},
		{name: "ListPublished wins over loose", cfg: Config{Nodes: nodes, List: true, ListPublished: true, GetVolume: true,
			LoosePublishedNodes: true, ExtraPublishedNodeIDs: []string{"ghost"}},
			want: [5][]string{nil, {"node-1"}, {"node-1"}, nil, nil}},
		{name: "loose", cfg: Config{Nodes: nodes, List: true, GetVolume: true, LoosePublishedNodes: true},
			want: [5][]string{{""}, {""}, {"node-1"}, {"node-1"}, {"node-2"}}},
		{name: "loose with stale nodes", cfg: Config{Nodes: nodes, List: true, GetVolume: true, LoosePublishedNodes: true,
			ExtraPublishedNodeIDs: []string{"ghost", "node-9"}},
			want: [5][]string{{"", "ghost", "node-9"}, {"", "ghost", "node-9"}, {"node-1", "ghost", "node-9"},
				{"node-1", "ghost", "node-9"}, {"node-2", "ghost", "node-9"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(tc.cfg)
			d.AddVolume("v")
			n1, n2, dir := serve(t, d, "node-1"), serve(t, d, "node-2"), t.TempDir()
			check := func(stage int) {
				t.Helper()
				g, err := n1.ctl.ControllerGetVolume(t.Context(), &spec.ControllerGetVolumeRequest{VolumeId: "v"})
				if err != nil {
					t.Fatal(err)
				}
				if got := g.GetStatus().GetPublishedNodeIds(); !slices.Equal(got, tc.want[stage]) {
					t.Errorf("stage %d: ControllerGetVolume reports %q, want %q", stage, got, tc.want[stage])
				}
				l, err := n1.ctl.ListVolumes(t.Context(), &spec.ListVolumesRequest{})
				if err != nil || len(l.GetEntries()) != 1 {
					t.Fatalf("ListVolumes: %v, %v", l, err)
				}
				switch st := l.GetEntries()[0].GetStatus(); {
				case tc.noStatus && st != nil:
					t.Errorf("stage %d: ListVolumes reports a status, %v", stage, st)
				case !tc.noStatus && !slices.Equal(st.GetPublishedNodeIds(), tc.want[stage]):
					t.Errorf("stage %d: ListVolumes reports %q, want %q", stage, st.GetPublishedNodeIds(), tc.want[stage])
				}
			}
			check(0)
			pc, err := n1.publish(t, "v", use{cap: mount("ext4")})
			if err != nil {
				t.Fatal(err)
			}
			check(1)
			target := dir + "/t1"
			if err := n1.nodePublish(t, "v", "", target, pc, use{cap: mount("ext4")}); err != nil {
				t.Fatal(err)
			}
			check(2)
			n1.detach(t, "v", target)
			check(3)
			n2.detach(t, "v", n2.attach(t, "v", dir))
			check(4)
		})
	}
}

// A node at its max_volumes_per_node takes no more volumes, whatever
// EnforceNodeLimit says (the fake always enforced it), but takes again
// one it has.
func TestNodeLimit(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		d := New(Config{Nodes: map[string]int64{"node-1": 2, "node-2": 0}, EnforceNodeLimit: enforce})
		for _, v := range []string{"a", "b", "c"} {
			d.AddVolume(v)
		}
		n1, n2 := serve(t, d, "node-1"), serve(t, d, "node-2")
		pa, errA := n1.publish(t, "a", use{cap: mount("ext4")})
		_, errB := n1.publish(t, "b", use{cap: mount("ext4")})
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		before := d.Describe()
		_, err := n1.publish(t, "c", use{cap: mount("ext4")})
		wantCode(t, "a third volume", err, codes.ResourceExhausted)
		if msg := status.Convert(err).Message(); !strings.Contains(msg, "node-1") || !strings.Contains(msg, "2") {
			t.Errorf("%q names not the node and its limit", msg)
		}
		if after := d.Describe(); after != before {
			t.Errorf("a refused publish changed\n%s\ninto\n%s", before, after)
		}
		again, err := n1.publish(t, "a", use{cap: mount("ext4")})
		if err != nil || !maps.Equal(again, pa) {
			t.Errorf("publishing a again: %v, %v, want %v", again, err, pa)
		}
		if _, err := n2.publish(t, "c", use{cap: mount("ext4")}); err != nil {
			t.Errorf("a node without a limit: %v", err)
		}
		if got := d.PublishedTo("c"); !slices.Equal(got, []string{"node-2"}) {
			t.Errorf("c published to %v", got)
		}
	}
}

// A driver not ready at start fails its first Probe and GetPluginInfo
// calls (those Before lets through) with UNAVAILABLE, then answers.
func TestNotReadyAtStart(t *testing.T) {
	abortFirstProbe := func() func(context.Context, string) error {
		var done atomic.Bool
		return func(_ context.Context, method string) error {
			if method == "Probe" && done.CompareAndSwap(false, true) {
				return status.Error(codes.Aborted, "injected")
			}
			return nil
		}
	}
	U, A, OK := codes.Unavailable, codes.Aborted, codes.OK
	for _, tc := range []struct {
		name        string
		cfg         Config
		probe, info []codes.Code
	}{
		{name: "ready", cfg: Config{}, probe: []codes.Code{OK, OK}, info: []codes.Code{OK, OK}},
		{name: "not ready", cfg: Config{ProbeFailures: 2, InfoFailures: 1},
			probe: []codes.Code{U, U, OK, OK}, info: []codes.Code{U, OK, OK}},
		{name: "Before first", cfg: Config{ProbeFailures: 1, Before: abortFirstProbe()},
			probe: []codes.Code{A, U, OK}, info: []codes.Code{OK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := serve(t, New(tc.cfg), "")
			for i, want := range tc.probe {
				r, err := p.id.Probe(t.Context(), &spec.ProbeRequest{})
				wantCode(t, "Probe", err, want)
				if err == nil && !r.GetReady().GetValue() {
					t.Errorf("Probe %d: not ready", i)
				}
			}
			for _, want := range tc.info {
				r, err := p.id.GetPluginInfo(t.Context(), &spec.GetPluginInfoRequest{})
				wantCode(t, "GetPluginInfo", err, want)
				if err == nil && r.GetName() != "csi.tether.test" {
					t.Errorf("GetPluginInfo: name %q", r.GetName())
				}
			}
		})
	}
}
