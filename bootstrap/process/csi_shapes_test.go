package process

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/messages"
)

// The shapes a real CSI driver may have within the spec (csitest's
// matrix), each run end to end on an embedded tether: workloads reach
// their mounts, nothing is unpublished while in use across several sync
// periods, and a delete unpublishes everything. The driver's state and
// its call log are the ground truth.

// newCSIShape serves drv as it is (no capability added) and starts
// tether on it.
func newCSIShape(t *testing.T, drv csitest.Config) *csiRig {
	t.Helper()
	if drv.Nodes == nil {
		drv.Nodes = map[string]int64{csiNodeID: 0}
	}
	d := csitest.New(drv)
	ctl, nd := d.Serve(t, ""), d.Serve(t, csiNodeID)
	r := &csiRig{d: d, cfg: csiConfig(t, t.TempDir(), ctl, nd)}
	r.start(t)
	return r
}

// passes counts the controller's sync passes from now on.
func (r *csiRig) passes(t *testing.T) func() int {
	var mu sync.Mutex
	n := 0
	sub := r.e.System.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*messages.SyncPassFinished); ok {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	t.Cleanup(func() { r.e.System.EventStream.Unsubscribe(sub) })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// workloadEvents lists workload uid's events, "Type: message".
func (r *csiRig) workloadEvents(uid string) string {
	var b strings.Builder
	for _, ev := range r.e.Events.For(events.Ref{Kind: events.KindWorkload, Name: uid}) {
		fmt.Fprintf(&b, "%s: %s\n", ev.Type, ev.Message)
	}
	return b.String()
}

// lifecycle serves two volumes to two workloads, holds them across three
// sync periods with nothing unpublished, and deletes both: everything is
// unpublished.
func (r *csiRig) lifecycle(t *testing.T) {
	t.Helper()
	passes := r.passes(t)
	r.d.AddVolume("v1")
	r.d.AddVolume("v2")
	r.apply(t, []cloud.VolumeID{"v1", "v2"}, map[string][]cloud.VolumeID{"w1": {"v1"}, "w2": {"v2"}})
	r.waitFor(t, "v1 and v2 served", func() bool { return r.served(t, "v1", "w1") && r.served(t, "v2", "w2") })
	at := passes()
	r.waitFor(t, "three sync passes", func() bool { return passes() >= at+3 })
	for _, m := range []string{"ControllerUnpublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"} {
		if n := r.d.Count(m, ""); n != 0 {
			t.Errorf("%d %s calls while every volume is in use; the driver was asked %v", n, m, r.changes(0))
		}
	}
	if n := r.d.Count("ControllerPublishVolume", ""); n != 2 {
		t.Errorf("%d ControllerPublishVolume calls, want 2 (one per volume)", n)
	}
	for _, uid := range []string{"w1", "w2"} {
		if err := r.e.Ctl().DeleteWorkload(uid); err != nil {
			t.Fatal(err)
		}
	}
	r.waitFor(t, "everything unpublished", func() bool { return r.gone("v1") && r.gone("v2") })
}

// A driver without LIST_VOLUMES_PUBLISHED_NODES that fills
// published_node_ids loosely (an empty string for a fresh volume, the
// last node that ran NodePublish for ever after, and stale nodes): tether
// interprets none of it. Before, the agent refused to stage ("not
// published to this node, says the controller plugin") and the sync
// unpublished every node-published volume every period.
func TestCSILooselyListedPublishedNodes(t *testing.T) {
	for name, drv := range map[string]csitest.Config{
		"get-volume":                 {GetVolume: true, StageUnstage: true, LoosePublishedNodes: true, ExtraPublishedNodeIDs: []string{"node-gone"}},
		"list-without-published":     {List: true, GetVolume: true, StageUnstage: true, LoosePublishedNodes: true},
		"no-way-to-list-at-all":      {StageUnstage: true},
		"list-published-with-extras": {List: true, ListPublished: true, StageUnstage: true},
	} {
		t.Run(name, func(t *testing.T) {
			r := newCSIShape(t, drv)
			r.lifecycle(t)
			if !drv.ListPublished {
				for _, m := range []string{"ControllerGetVolume", "ListVolumes"} {
					if n := r.d.Count(m, ""); n != 0 {
						t.Errorf("%d %s calls: without LIST_VOLUMES_PUBLISHED_NODES there is nothing to interpret", n, m)
					}
				}
			}
		})
	}
}

// A listing that names a node tether never published to (the spec: it
// "MAY include nodes not published to"): reported, never unpublished.
func TestCSIExtraListedNodeNotUnpublished(t *testing.T) {
	r := newCSIShape(t, csitest.Config{List: true, ListPublished: true, StageUnstage: true})
	passes := r.passes(t)
	r.d.AddVolume("theirs")
	r.d.Publish("theirs", csiNodeID) // someone else's, on tether's node
	r.d.AddVolume("v1")
	r.apply(t, []cloud.VolumeID{"v1", "theirs"}, map[string][]cloud.VolumeID{"w1": {"v1"}})
	r.waitFor(t, "v1 served", func() bool { return r.served(t, "v1", "w1") })
	at := passes()
	r.waitFor(t, "three sync passes", func() bool { return passes() >= at+3 })
	if n := r.d.Count("ControllerUnpublishVolume", "theirs"); n != 0 {
		t.Errorf("%d ControllerUnpublishVolume of a publication tether never made", n)
	}
	if ev := r.events("theirs"); strings.Count(ev, "UnexpectedAttachment") != 1 {
		t.Errorf("events of theirs:\n%s\nwant one UnexpectedAttachment", ev)
	}
}

// A driver without STAGE_UNSTAGE: published straight to the target.
func TestCSINoStageUnstage(t *testing.T) {
	r := newCSIShape(t, csitest.Config{GetVolume: true})
	passes := r.passes(t)
	r.d.AddVolume("v1")
	r.apply(t, []cloud.VolumeID{"v1"}, map[string][]cloud.VolumeID{"w1": {"v1"}})
	r.waitFor(t, "v1 published to w1", func() bool {
		_, target := r.paths(t, "w1", "v1")
		tg := r.d.Targets("v1", csiNodeID)
		return len(tg) == 1 && tg[0] == target
	})
	at := passes()
	r.waitFor(t, "three sync passes", func() bool { return passes() >= at+3 })
	for _, m := range []string{"NodeStageVolume", "ControllerUnpublishVolume", "NodeUnpublishVolume"} {
		if n := r.d.Count(m, ""); n != 0 {
			t.Errorf("%d %s calls while v1 is in use on a driver that does not stage", n, m)
		}
	}
	if err := r.e.Ctl().DeleteWorkload("w1"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "v1 unpublished", func() bool { return r.gone("v1") })
}

// The driver's own limit answered with RESOURCE_EXHAUSTED: not
// published, an event and a backoff, never counted. tether counts only
// what it published itself, so once the node's volumes left, a new one
// goes at once (before, the driver's loose listing kept the node "full"
// for ever).
func TestCSIResourceExhausted(t *testing.T) {
	r := newCSIShape(t, csitest.Config{GetVolume: true, StageUnstage: true, LoosePublishedNodes: true,
		EnforceNodeLimit: true, Nodes: map[string]int64{csiNodeID: 2}})
	for _, v := range []string{"v1", "v2", "v3", "theirs"} {
		r.d.AddVolume(v)
	}
	r.d.Publish("theirs", csiNodeID) // behind tether's back: tether counts 0, the driver 1
	r.apply(t, []cloud.VolumeID{"v1", "v2"}, map[string][]cloud.VolumeID{"w1": {"v1"}, "w2": {"v2"}})
	r.waitFor(t, "a RESOURCE_EXHAUSTED answer", func() bool {
		return strings.Contains(r.events("v1")+r.events("v2"), "ResourceExhausted")
	})
	r.waitFor(t, "one of v1, v2 served", func() bool { return r.served(t, "v1", "w1") || r.served(t, "v2", "w2") })
	r.d.Unpublish("theirs", csiNodeID)
	r.waitFor(t, "both served once the driver has room", func() bool { return r.served(t, "v1", "w1") && r.served(t, "v2", "w2") })

	for _, uid := range []string{"w1", "w2"} {
		if err := r.e.Ctl().DeleteWorkload(uid); err != nil {
			t.Fatal(err)
		}
	}
	r.waitFor(t, "both gone", func() bool { return r.gone("v1") && r.gone("v2") })
	r.apply(t, []cloud.VolumeID{"v3"}, map[string][]cloud.VolumeID{"w3": {"v3"}})
	r.waitFor(t, "v3 served on the emptied node", func() bool { return r.served(t, "v3", "w3") })
	if ev := r.events("v3"); strings.Contains(ev, "FailedAttachVolume") {
		t.Errorf("v3 was refused on an empty node:\n%s", ev)
	}
}

// A stage the node plugin refuses for good (INVALID_ARGUMENT): an event
// on each workload that waits for it (before, only on the node), naming
// the refusal and a retry at the backoff's cap, not a hot loop.
func TestCSIStageRefusedTellsTheWorkload(t *testing.T) {
	drv := csitest.Config{GetVolume: true, StageUnstage: true, Before: func(_ context.Context, method string) error {
		if method == "NodeStageVolume" {
			return status.Error(codes.InvalidArgument, "no such share on this node")
		}
		return nil
	}}
	r := newCSIShape(t, drv)
	r.d.AddVolume("v1")
	r.apply(t, []cloud.VolumeID{"v1"}, map[string][]cloud.VolumeID{"w1": {"v1"}, "w2": {"v1"}})
	for _, uid := range []string{"w1", "w2"} {
		r.waitFor(t, uid+" told", func() bool { return strings.Contains(r.workloadEvents(uid), "FailedMount") })
		ev := r.workloadEvents(uid)
		if !strings.Contains(ev, "no such share on this node") || !strings.Contains(ev, "no retry for 2m") {
			t.Errorf("events of %s:\n%s\nwant the refusal and a retry at the cap", uid, ev)
		}
	}
	if n := r.d.Count("NodeStageVolume", "v1"); n != 1 {
		t.Errorf("%d NodeStageVolume calls, want 1 before the cap", n)
	}
}

// A driver not ready at start (Probe and GetPluginInfo failing UNAVAILABLE
// for a while) is waited for, with backoff, within the dial timeout
// (--csi-wait); one that never gets ready fails the start clearly.
func TestCSISlowDriverAtStart(t *testing.T) {
	r := newCSIShape(t, csitest.Config{GetVolume: true, StageUnstage: true, ProbeFailures: 2, InfoFailures: 3})
	r.lifecycle(t)

	never := csitest.Config{GetVolume: true, Before: func(_ context.Context, method string) error {
		if method == "GetPluginInfo" {
			return status.Error(codes.Unavailable, "still connecting to the storage backend")
		}
		return nil
	}}
	d := csitest.New(never)
	cfg := csiConfig(t, t.TempDir(), d.Serve(t, ""), d.Serve(t, csiNodeID))
	cfg.CSI.DialTimeout = 2 * time.Second
	e, err := StartEmbedded(cfg)
	if err == nil {
		_ = e.Stop()
		t.Fatal("tether started on a driver that never answered GetPluginInfo")
	}
	if msg := err.Error(); !strings.Contains(msg, "GetPluginInfo") || !strings.Contains(msg, "still connecting to the storage backend") || !strings.Contains(msg, "tries") {
		t.Errorf("start failed with %q; want it to name GetPluginInfo, the driver's last answer and the tries", msg)
	}
}

// Three node plugins of one driver on one machine, each with its own
// node ID: each node is its plugin's node ID, and an exclusive volume
// moves between them, unpublished from one node before it is published
// to the next.
func TestCSIManyNodes(t *testing.T) {
	ids := []string{"node-a", "node-b", "node-c"}
	drv := csitest.Config{GetVolume: true, StageUnstage: true, LoosePublishedNodes: true,
		Nodes: map[string]int64{"node-a": 0, "node-b": 0, "node-c": 0}}
	d := csitest.New(drv)
	ctl := d.Serve(t, "")
	var sockets []string
	for _, id := range ids {
		sockets = append(sockets, d.Serve(t, id))
	}
	cfg := csiConfig(t, t.TempDir(), ctl, "")
	cfg.CSI.NodeSockets, cfg.Nodes = sockets, len(sockets)
	r := &csiRig{d: d, cfg: cfg}
	r.start(t)
	for i, id := range ids {
		n := cloud.NodeName(fmt.Sprintf("n%d", i+1))
		if inst, ok := r.e.Account.InstanceOf(n); !ok || string(inst) != id {
			t.Fatalf("%s's instance is %q, %v; want its plugin's node ID %s", n, inst, ok, id)
		}
	}
	r.d.AddVolume("data")
	if err := r.e.Account.CreateVolume("data", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	at := func(n cloud.NodeName, id string) func() bool {
		return func() bool {
			return slices.Equal(r.d.PublishedTo("data"), []string{id}) && len(r.d.Targets("data", id)) == 1
		}
	}
	for i, id := range ids {
		n := cloud.NodeName(fmt.Sprintf("n%d", i+1))
		uid := fmt.Sprintf("app-%d", i)
		if i > 0 {
			if err := r.e.Ctl().DeleteWorkload(fmt.Sprintf("app-%d", i-1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.e.Ctl().ApplyAll([]controller.Change{
			{Volume: &store.VolumeSpec{ID: "data", Mode: cloud.Exclusive}},
			{Workload: &store.Workload{UID: uid, Node: n, Volumes: []cloud.VolumeID{"data"}}}}); err != nil {
			t.Fatal(err)
		}
		r.waitFor(t, "data served on "+string(n), at(n, id))
	}
	// Ground truth, in order: each ControllerPublishVolume to the next
	// node came after the ControllerUnpublishVolume from the previous.
	var seq []string
	for _, c := range r.d.Calls() {
		if c.Method == "ControllerPublishVolume" || c.Method == "ControllerUnpublishVolume" {
			seq = append(seq, c.Method+" "+c.Node)
		}
	}
	want := []string{"ControllerPublishVolume node-a", "ControllerUnpublishVolume node-a", "ControllerPublishVolume node-b",
		"ControllerUnpublishVolume node-b", "ControllerPublishVolume node-c"}
	if !slices.Equal(seq, want) {
		t.Errorf("controller calls %v, want %v", seq, want)
	}
	if err := r.e.Ctl().DeleteWorkload("app-2"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "data unpublished everywhere", func() bool { return len(r.d.PublishedTo("data")) == 0 })
}
