package process

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/node/reconciler"
)

// A volume and a workload: published by the controller, then staged and
// published by the node plugin at the layout's paths, each once and in
// that order; the node's instance is the plugin's node ID. The workload
// deleted: unpublished, unstaged, then unpublished by the controller.
func TestCSIMountAndUnmount(t *testing.T) {
	for name, drv := range map[string]csitest.Config{
		"list-volumes": {List: true, ListPublished: true},
		"get-volume":   {GetVolume: true}, // asked about tether's volumes one by one
	} {
		t.Run(name, func(t *testing.T) { testCSIMountAndUnmount(t, drv) })
	}
}

func testCSIMountAndUnmount(t *testing.T, drv csitest.Config) {
	r := newCSIRig(t, drv)
	if inst, ok := r.e.Account.InstanceOf(csiNode); !ok || inst != csiNodeID {
		t.Fatalf("n1's instance is %q, %v; want the node plugin's ID %s", inst, ok, csiNodeID)
	}
	r.d.AddVolume("data")
	r.apply(t, []cloud.VolumeID{"data"}, map[string][]cloud.VolumeID{"app": {"data"}})
	r.waitFor(t, "data served to app", func() bool { return r.served(t, "data", "app") })
	want := []string{"ControllerPublishVolume data", "NodeStageVolume data", "NodePublishVolume data"}
	if got := r.changes(0); !slices.Equal(got, want) {
		t.Errorf("the driver was asked %v, want %v", got, want)
	}
	_, target := r.paths(t, "app", "data")
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		t.Errorf("the workload's target %s: %v", target, err)
	}

	// Moved to another workload on the node: the stage stays.
	if _, err := r.e.Ctl().ApplyAll([]controller.Change{{Workload: &store.Workload{UID: "app2", Node: csiNode, Volumes: []cloud.VolumeID{"data"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Ctl().DeleteWorkload("app"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "data served to app2 alone", func() bool { return r.served(t, "data", "app2") })
	want = []string{"NodePublishVolume data", "NodeUnpublishVolume data"}
	if got := r.changes(3); !slices.Equal(sorted(got), want) {
		t.Errorf("moving between workloads asked %v, want %v", got, want)
	}

	if err := r.e.Ctl().DeleteWorkload("app2"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "data unpublished everywhere", func() bool { return r.gone("data") })
	want = []string{"NodeUnpublishVolume data", "NodeUnstageVolume data", "ControllerUnpublishVolume data"}
	if got := r.changes(5); !slices.Equal(got, want) {
		t.Errorf("the driver was asked %v, want %v", got, want)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target is still there: %v", err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// An exclusive volume published to another node: the driver refuses
// (FAILED_PRECONDITION, attached elsewhere), tether retries with backoff
// and serves it once the other node lets go.
func TestCSIAttachedElsewhere(t *testing.T) {
	r := newCSIRig(t, csitest.Config{})
	r.d.AddVolume("data")
	r.d.Publish("data", "node-9") // someone else's
	r.apply(t, []cloud.VolumeID{"data"}, map[string][]cloud.VolumeID{"app": {"data"}})
	r.waitFor(t, "two refused publishes", func() bool { return r.d.Count("ControllerPublishVolume", "data") >= 2 })
	if ev := r.events("data"); !strings.Contains(ev, "FailedAttachVolume") || !strings.Contains(ev, "FailedPrecondition") {
		t.Errorf("events of data:\n%s\nwant FailedAttachVolume with the driver's refusal", ev)
	}
	if r.d.Count("NodeStageVolume", "") != 0 {
		t.Error("the node staged a volume that is not published to it")
	}
	r.d.Unpublish("data", "node-9")
	r.waitFor(t, "data served once node-9 let go", func() bool { return r.served(t, "data", "app") })
}

// The node plugin's max_volumes_per_node holds: with room for two, the
// third volume is refused by tether itself (the driver never asked) until
// one of the others is gone.
func TestCSINodeLimit(t *testing.T) {
	r := newCSIRig(t, csitest.Config{Nodes: map[string]int64{csiNodeID: 2}})
	for _, v := range []string{"v1", "v2", "v3"} {
		r.d.AddVolume(v)
	}
	r.apply(t, []cloud.VolumeID{"v1", "v2"}, map[string][]cloud.VolumeID{"w1": {"v1"}, "w2": {"v2"}})
	r.waitFor(t, "v1 and v2 served", func() bool { return r.served(t, "v1", "w1") && r.served(t, "v2", "w2") })
	r.apply(t, []cloud.VolumeID{"v3"}, map[string][]cloud.VolumeID{"w3": {"v3"}})
	r.waitFor(t, "v3 refused twice", func() bool { return strings.Count(r.events("v3"), "max_volumes_per_node is 2") >= 2 })
	if n := r.d.Count("ControllerPublishVolume", "v3"); n != 0 {
		t.Errorf("the driver was asked to publish v3 %d times beyond the node's limit", n)
	}
	if err := r.e.Ctl().DeleteWorkload("w1"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "v3 served once v1 is gone", func() bool { return r.gone("v1") && r.served(t, "v3", "w3") })
}

// Nothing is asked again of the driver when the controller restarts, the
// agent restarts (it reads its mounts back), or the whole process does
// (the node plugin's ID and the mounts come back from the driver and
// the state file).
func TestCSIRestartsRedoNothing(t *testing.T) {
	r := newCSIRig(t, csitest.Config{})
	r.d.AddVolume("data")
	r.apply(t, []cloud.VolumeID{"data"}, map[string][]cloud.VolumeID{"app": {"data"}})
	r.waitFor(t, "data served", func() bool { return r.served(t, "data", "app") })
	done := len(r.changes(0))
	quiet := func(what string) {
		t.Helper()
		time.Sleep(3 * r.cfg.Controller.SyncPeriod) // three syncs, a few heartbeats
		if got := r.changes(done); len(got) > 1 || (len(got) == 1 && got[0] != "ControllerPublishVolume data") || !r.served(t, "data", "app") {
			t.Errorf("after %s the driver was asked %v; it has:\n%s", what, got, r.d.Describe())
		}
	}

	if err := r.e.RestartController(); err != nil {
		t.Fatal(err)
	}
	quiet("a controller restart")

	reconstructed := r.e.Events.Count(reconciler.EventReconstructed)
	if err := r.e.StopAgent(csiNode); err != nil {
		t.Fatal(err)
	}
	if err := r.e.StartAgent(csiNode); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the agent reading its mounts back", func() bool { return r.e.Events.Count(reconciler.EventReconstructed) > reconstructed })
	quiet("an agent restart")

	if err := r.e.Stop(); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	r.waitFor(t, "the new agent reading its mounts back", func() bool { return r.e.Events.Count(reconciler.EventReconstructed) > 0 })
	quiet("a process restart")

	// Still working: the workload's deletion undoes everything.
	if err := r.e.Ctl().DeleteWorkload("app"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "data unpublished everywhere", func() bool { return r.gone("data") })
}

// What a CSI driver cannot do is refused, saying why: a volume it lacks
// (nothing is created), another node, instance administration; a start
// with another driver's data directory, more than one node, or on a
// directory another cloud ran.
func TestCSIRefusals(t *testing.T) {
	r := newCSIRig(t, csitest.Config{})
	err := r.e.Account.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "nope", Mode: cloud.Exclusive}})
	if !errors.Is(err, controller.ErrInvalid) || !strings.Contains(err.Error(), "tether does not create CSI volumes") {
		t.Errorf("a volume the driver lacks: %v", err)
	}
	if n := r.d.Count("CreateVolume", ""); n != 0 {
		t.Errorf("tether created %d volumes", n)
	}
	if _, err := r.e.Account.AddInstanceChecked("n2"); !errors.Is(err, controller.ErrInvalid) {
		t.Errorf("another node: %v; want refused", err)
	}
	for _, op := range []func(cloud.InstanceID) error{r.e.Account.Terminate, r.e.Account.Start, r.e.Account.Delete} {
		if err := op(csiNodeID); !errors.Is(err, controller.ErrInvalid) || !strings.Contains(err.Error(), "no instances to administer") {
			t.Errorf("instance administration: %v; want refused", err)
		}
	}
	if err := r.e.Stop(); err != nil {
		t.Fatal(err)
	}

	cfg := r.cfg
	cfg.Nodes = 2
	if _, err := StartEmbedded(cfg); err == nil || !strings.Contains(err.Error(), "Nodes must be 1") {
		t.Errorf("two nodes: %v; want refused", err)
	}
	other := csitest.New(csitest.Config{Name: "other.csi.test", Nodes: map[string]int64{csiNodeID: 0}, List: true, ListPublished: true})
	cfg = r.cfg
	cfg.CSI.ControllerSocket, cfg.CSI.NodeSocket = other.Serve(t, ""), other.Serve(t, csiNodeID)
	if _, err := StartEmbedded(cfg); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), `ran with CSI driver "csi.tether.test"`) {
		t.Errorf("another driver on the data directory: %v; want refused", err)
	}
	cfg.CSI.ControllerSocket = r.cfg.CSI.ControllerSocket
	if _, err := StartEmbedded(cfg); err == nil || !strings.Contains(err.Error(), "give both plugins of one driver") {
		t.Errorf("two drivers' plugins: %v; want refused", err)
	}
	sc := DefaultConfig()
	sc.DataDir, sc.Durable, sc.LogOutput = r.cfg.DataDir, true, testLog{t}
	if _, err := StartEmbedded(sc); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "--csi-controller-socket and --csi-node-socket") {
		t.Errorf("the sim on a CSI data directory: %v; want refused", err)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.DataDir, simStateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start made the sim's state: %v", err)
	}
}

// A lost store is refused (the account file and the node directory show
// a tether ran), and --rebuild-store rebuilds it from what the driver has
// published to the node and what the node's records say is mounted.
// Nothing is mounted or unpublished again; the device path (the publish
// context), which only the lost store had, is asked again with one
// idempotent ControllerPublishVolume.
func TestCSIRebuildStore(t *testing.T) {
	r := newCSIRig(t, csitest.Config{})
	r.d.AddVolume("data")
	r.d.AddVolume("idle") // the driver's, never applied: no sign of a tether
	r.apply(t, []cloud.VolumeID{"data"}, map[string][]cloud.VolumeID{"app": {"data"}})
	r.waitFor(t, "data served", func() bool { return r.served(t, "data", "app") })
	done := len(r.changes(0))
	if err := r.e.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.cfg.DataDir, StoreFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := StartEmbedded(r.cfg); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "the cloud holds 1 volumes (1 attachments)") {
		t.Fatalf("a lost store: %v; want refused, counting the published volume", err)
	}
	r.cfg.RebuildStore = true
	r.start(t)
	w, ok, err := r.e.Store.Workload("app")
	if err != nil || !ok || w.Node != csiNode || !slices.Equal(w.Volumes, []cloud.VolumeID{"data"}) {
		t.Fatalf("rebuilt workload app: %+v, %v, %v", w, ok, err)
	}
	if _, ok, _ := r.e.Store.Volume("idle"); ok {
		t.Error("the driver's volume that tether never used was taken into the store")
	}
	time.Sleep(3 * r.cfg.Controller.SyncPeriod)
	if got := r.changes(done); len(got) > 1 || (len(got) == 1 && got[0] != "ControllerPublishVolume data") || !r.served(t, "data", "app") {
		t.Errorf("after the rebuild the driver was asked %v; it has:\n%s", got, r.d.Describe())
	}
}

// A volume unpublished behind tether's back (the driver's own tooling) is
// found by the next sync and published again.
func TestCSIConsoleDetachHealed(t *testing.T) {
	r := newCSIRig(t, csitest.Config{})
	r.d.AddVolume("data")
	r.apply(t, []cloud.VolumeID{"data"}, map[string][]cloud.VolumeID{"app": {"data"}})
	r.waitFor(t, "data served", func() bool { return r.served(t, "data", "app") })
	if err := r.e.Account.(*csiAccount).ConsoleDetach("data", csiNodeID); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "data published again", func() bool {
		return r.d.Count("ControllerPublishVolume", "data") == 2 && r.served(t, "data", "app")
	})
	if ev := r.events("data"); !strings.Contains(ev, "AttachmentLost") {
		t.Errorf("events of data:\n%s\nwant AttachmentLost", ev)
	}
}
