package process

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/layout"
)

// The CSI tests run an embedded tether, durable as tether up runs it, on
// csitest's fake driver served on two unix sockets (its controller
// plugin, and the node plugin of node ID node-1). The fake's state and
// its log of the calls it received are the ground truth. Every server,
// socket and tether stops in t.Cleanup (tether first).

// csiNodeID is the fake node plugin's node ID.
const csiNodeID = "node-1"

// csiRig is a fake driver and the tether running on it.
type csiRig struct {
	d   *csitest.Driver
	cfg Config
	e   *Embedded
}

// newCSIRig serves a fake driver of drv (which stages; by default node-1
// unlimited, verification by ListVolumes with published nodes) and
// starts tether on it.
func newCSIRig(t *testing.T, drv csitest.Config) *csiRig {
	t.Helper()
	if drv.Nodes == nil {
		drv.Nodes = map[string]int64{csiNodeID: 0}
	}
	if !drv.List && !drv.GetVolume {
		drv.List, drv.ListPublished = true, true
	}
	drv.StageUnstage = true
	d := csitest.New(drv)
	ctl, nd := d.Serve(t, ""), d.Serve(t, csiNodeID)
	r := &csiRig{d: d, cfg: csiConfig(t, t.TempDir(), ctl, nd)}
	r.start(t)
	return r
}

// csiConfig is tether up's embedded configuration on the sockets, with a
// sync every second.
func csiConfig(t *testing.T, dir, ctl, nd string) Config {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Durable, cfg.Cloud, cfg.Nodes = dir, true, CloudCSI, 1
	cfg.CSI = CSIConfig{ControllerSocket: ctl, NodeSocket: nd, DialTimeout: 10 * time.Second}
	cfg.LogOutput, cfg.LogLevel = testLog{t}, "warn"
	cfg.Controller.SyncPeriod = time.Second
	cfg.Agent.StopGrace = 200 * time.Millisecond
	cfg.Agent.HeartbeatEvery = time.Second // a restarted controller hears the agent soon
	return cfg
}

// start starts tether on the rig's driver, stopped at cleanup.
func (r *csiRig) start(t *testing.T) {
	t.Helper()
	e, err := StartEmbedded(r.cfg)
	if err != nil {
		t.Fatalf("starting tether on the fake CSI driver: %v", err)
	}
	r.e = e
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// apply applies the volumes (exclusive) and the workloads (uid: its
// volumes) on n1, checking new volumes in the driver as tether apply does.
func (r *csiRig) apply(t *testing.T, vols []cloud.VolumeID, workloads map[string][]cloud.VolumeID) {
	t.Helper()
	var chs []controller.Change
	for _, v := range vols {
		if err := r.e.Account.CreateVolume(v, cloud.Exclusive); err != nil {
			t.Fatal(err)
		}
		chs = append(chs, controller.Change{Volume: &store.VolumeSpec{ID: v, Mode: cloud.Exclusive}})
	}
	for uid, vs := range workloads {
		chs = append(chs, controller.Change{Workload: &store.Workload{UID: uid, Node: csiNode, Volumes: vs}})
	}
	if _, err := r.e.Ctl().ApplyAll(chs); err != nil {
		t.Fatal(err)
	}
}

// paths are vol's staging path and its target for workload uid on n1.
func (r *csiRig) paths(t *testing.T, uid string, vol cloud.VolumeID) (staging, target string) {
	t.Helper()
	l, err := layout.New(r.e.NodeDir(csiNode))
	if err != nil {
		t.Fatal(err)
	}
	if staging, err = l.GlobalMount(CSIPlugin, string(vol)); err != nil {
		t.Fatal(err)
	}
	if target, err = l.PodVolume(uid, CSIPlugin, string(vol)); err != nil {
		t.Fatal(err)
	}
	return staging, target
}

// served reports whether the driver has vol published to node-1 alone,
// staged at its staging path and published at the targets of uids, and
// nowhere else.
func (r *csiRig) served(t *testing.T, vol cloud.VolumeID, uids ...string) bool {
	t.Helper()
	staging, _ := r.paths(t, "x", vol)
	var targets []string
	for _, uid := range uids {
		_, target := r.paths(t, uid, vol)
		targets = append(targets, target)
	}
	slices.Sort(targets)
	v := string(vol)
	return slices.Equal(r.d.PublishedTo(v), []string{csiNodeID}) &&
		slices.Equal(r.d.Staged(v, csiNodeID), []string{staging}) &&
		slices.Equal(r.d.Targets(v, csiNodeID), targets)
}

// gone reports whether the driver has vol published, staged and
// published nowhere.
func (r *csiRig) gone(vol cloud.VolumeID) bool {
	v := string(vol)
	return len(r.d.PublishedTo(v)) == 0 && len(r.d.Staged(v, csiNodeID)) == 0 && len(r.d.Targets(v, csiNodeID)) == 0
}

// waitFor polls cond, printing the driver's state if it times out.
func (r *csiRig) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testkit.Until(30*time.Second, cond) {
		t.Fatalf("not within 30s: %s; the driver has:\n%s", what, r.d.Describe())
	}
}

// mutating are the calls that change what is published, staged or
// mounted.
var mutating = []string{"ControllerPublishVolume", "ControllerUnpublishVolume", "NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume", "CreateVolume", "DeleteVolume"}

// changes lists the mutating calls the driver received after the first
// skip ones, as "Method volume".
func (r *csiRig) changes(skip int) []string {
	var out []string
	for _, c := range r.d.Calls() {
		if slices.Contains(mutating, c.Method) {
			out = append(out, c.Method+" "+c.Volume)
		}
	}
	return out[min(skip, len(out)):]
}

// events lists the events of volume vol, "Type: message".
func (r *csiRig) events(vol cloud.VolumeID) string {
	var b strings.Builder
	for _, ev := range r.e.Events.For(events.Ref{Kind: events.KindVolume, Name: string(vol)}) {
		fmt.Fprintf(&b, "%s: %s\n", ev.Type, ev.Message)
	}
	return b.String()
}
