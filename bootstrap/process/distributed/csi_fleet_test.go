package distributed_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/messages"
)

// CSI in distributed mode, as a real deployment runs it: two controller
// members given the driver's controller plugin socket, three agents each
// given its own machine's node plugin socket (three node plugins of one
// fake driver, each with its own node ID, served by this test). Each
// agent reports its plugin's node ID, which `get nodes` shows, and an
// exclusive volume moves n1 -> n2 -> n3, never published to two node IDs
// at once (the fake is permissive: the check reads its log of calls).
// The driver has no LIST_VOLUMES_PUBLISHED_NODES and fills
// published_node_ids loosely: nothing of it is interpreted. It requires
// the volume's volume_context on every publish and stage, and the
// volume is raw block: what the agents, which have no store, send their
// node plugins comes with the controller's publication.
func TestFleetCSIThreeNodePlugins(t *testing.T) {
	ids := map[cloud.NodeName]string{"n1": "node-a", "n2": "node-b", "n3": "node-c"}
	d := csitest.New(csitest.Config{GetVolume: true, StageUnstage: true, LoosePublishedNodes: true, MultiAttach: true,
		RequireVolumeContext: true, BlockOnly: true, Nodes: map[string]int64{"node-a": 4, "node-b": 4, "node-c": 4}})
	d.AddVolume("v-data")
	csi := &distributed.FleetCSI{ControllerSocket: d.Serve(t, ""), NodeSockets: map[cloud.NodeName]string{}}
	nodes := []cloud.NodeName{"n1", "n2", "n3"}
	for _, n := range nodes {
		csi.NodeSockets[n] = d.Serve(t, ids[n])
	}
	dir, err := os.MkdirTemp("", "tether-fleet-csi-")
	if err != nil {
		t.Fatal(err)
	}
	f, err := distributed.StartFleet(distributed.FleetConfig{Binary: binary, Dir: dir, Controllers: 2, Nodes: nodes,
		Token: "fleet-test-token", SyncPeriod: 2 * time.Second, Heartbeat: time.Second, CSI: csi})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, f: f, nodes: nodes, want: map[string]cloud.NodeName{}}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
		if t.Failed() {
			r.dumpLogs(dir)
			t.Logf("the fleet's directory is kept: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	var docs []*messages.Document
	for _, n := range nodes {
		docs = append(docs, nodeDoc(n))
	}
	vol := &messages.VolumeDoc{Name: "v-data", AccessMode: "ReadWriteOnce", VolumeMode: "Block",
		Csi: &messages.VolumeCSIDoc{VolumeAttributes: d.VolumeContext("v-data")}}
	r.apply(append(docs, &messages.Document{Doc: &messages.Document_Volume{Volume: vol}})...)

	r.eventually("every agent's node ID in get nodes", 60*time.Second, func() bool {
		got := r.nodeIDs()
		for _, n := range nodes {
			if got[n] != ids[n] {
				return false
			}
		}
		return true
	})
	for i, n := range nodes {
		w := fmt.Sprintf("w-data-%d", i)
		if i > 0 {
			r.deleteWorkload(fmt.Sprintf("w-data-%d", i-1))
		}
		r.apply(&messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: w, Node: string(n),
			Volumes: []*messages.WorkloadVolumeDoc{{Name: "v-data"}}}}})
		r.eventually("v-data served to "+w+" on "+string(n), 90*time.Second, func() bool {
			return slices.Equal(d.PublishedTo("v-data"), []string{ids[n]}) && len(d.Targets("v-data", ids[n])) == 1 &&
				len(d.Staged("v-data", ids[n])) == 1
		})
	}
	r.deleteWorkload("w-data-2")
	r.eventually("v-data unpublished everywhere", 90*time.Second, func() bool { return len(d.PublishedTo("v-data")) == 0 })

	// I1 on the driver's own log: a publish to a node while the volume
	// is published to another is a violation, whatever the driver said.
	on := map[string]bool{}
	var seq []string
	for _, c := range d.Calls() {
		switch c.Method {
		case "ControllerPublishVolume":
			for other := range on {
				if other != c.Node {
					t.Errorf("I1: v-data published to %s while published to %s", c.Node, other)
				}
			}
			on[c.Node] = true
			seq = append(seq, "publish "+c.Node)
		case "ControllerUnpublishVolume":
			delete(on, c.Node)
			seq = append(seq, "unpublish "+c.Node)
		}
	}
	seq = slices.Compact(seq) // a repeated (idempotent) call is one step
	want := []string{"publish node-a", "unpublish node-a", "publish node-b", "unpublish node-b", "publish node-c", "unpublish node-c"}
	if !slices.Equal(seq, want) {
		t.Errorf("controller calls %v, want %v", seq, want)
	}
	for _, c := range d.Calls() {
		switch c.Method {
		case "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume":
			if !c.Block || c.VolumeContext["csi.tether.test/share"] != "share-v-data" {
				t.Errorf("%s on %s: block %v, volume_context %v; want block and the volume's context", c.Method, c.Node, c.Block, c.VolumeContext)
			}
		}
	}
	for _, m := range []string{"ListVolumes", "ControllerGetVolume"} {
		if n := d.Count(m, ""); n != 0 {
			t.Errorf("%d %s calls: without LIST_VOLUMES_PUBLISHED_NODES nothing is to be interpreted", n, m)
		}
	}
}

// nodeIDs is every node's instance as `tether get nodes` shows it.
func (r *rig) nodeIDs() map[cloud.NodeName]string {
	out := map[cloud.NodeName]string{}
	c, ctx, closeConn, err := r.f.API(context.Background())
	if err != nil {
		return out
	}
	defer func() { _ = closeConn() }()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.Get(cctx, &messages.GetRequest{Kind: "nodes"})
	if err != nil {
		return out
	}
	for _, n := range res.GetNodes() {
		out[cloud.NodeName(n.GetSpec().GetName())] = n.GetInstanceId()
	}
	return out
}

// deleteWorkload deletes workload w through the API, retrying while no
// member answers.
func (r *rig) deleteWorkload(w string) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, ctx, closeConn, err := r.f.API(context.Background())
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err = c.Delete(cctx, &messages.DeleteRequest{Kind: "workload", Name: w})
			cancel()
			_ = closeConn()
		}
		if err == nil || strings.Contains(err.Error(), "not found") {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("delete workload %s: %v", w, err)
		}
		time.Sleep(500 * time.Millisecond) // a retry's pace, not a synchronization
	}
}
