package process

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

// What a real driver needs of a volume (its volume_context, secrets,
// block or mount capability with fsType and mount options), end to end
// on an embedded tether over the fake driver, which demands each.

// logBuffer keeps what tether logs, and hands it to the test's log.
type logBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// csiVolumeRig is a csiRig on drv as it is, whose log (at info) and
// events are kept.
type csiVolumeRig struct {
	*csiRig
	log  *logBuffer
	mu   sync.Mutex
	seen []events.Event
}

func newCSIVolumeRig(t *testing.T, drv csitest.Config) *csiVolumeRig {
	t.Helper()
	if drv.Nodes == nil {
		drv.Nodes = map[string]int64{csiNodeID: 0}
	}
	d := csitest.New(drv)
	ctl, nd := d.Serve(t, ""), d.Serve(t, csiNodeID)
	r := &csiVolumeRig{csiRig: &csiRig{d: d, cfg: csiConfig(t, t.TempDir(), ctl, nd)}, log: &logBuffer{t: t}}
	r.cfg.LogOutput, r.cfg.LogLevel = r.log, "info"
	r.start(t)
	r.e.Events.Subscribe(func(ev events.Event) {
		r.mu.Lock()
		r.seen = append(r.seen, ev)
		r.mu.Unlock()
	})
	return r
}

// allEvents is every event since the rig started, one a line.
func (r *csiVolumeRig) allEvents() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, ev := range r.seen {
		b.WriteString(ev.Type + ": " + ev.Message + "\n")
	}
	return b.String()
}

// applySpecs applies vols and workloads (uid: its volumes, on n1) as
// tether apply does: the driver checks the new volumes first
// (api.DriverVolumes), then the controller applies all or nothing.
func (r *csiRig) applySpecs(vols []store.VolumeSpec, workloads map[string][]cloud.VolumeID) error {
	if err := r.e.Account.(api.DriverVolumes).ProvisionVolumes(vols); err != nil {
		return err
	}
	return r.applyUnchecked(vols, workloads)
}

// applyUnchecked applies vols and workloads without asking the driver
// (what a volume applied before its driver changed would meet).
func (r *csiRig) applyUnchecked(vols []store.VolumeSpec, workloads map[string][]cloud.VolumeID) error {
	var chs []controller.Change
	for _, v := range vols {
		chs = append(chs, controller.Change{Volume: &v})
	}
	for _, uid := range slices.Sorted(maps.Keys(workloads)) {
		chs = append(chs, controller.Change{Workload: &store.Workload{UID: uid, Node: csiNode, Volumes: workloads[uid]}})
	}
	_, err := r.e.Ctl().ApplyAll(chs)
	return err
}

// capabilityCalls are the driver's calls about vol that carry a
// capability and a volume_context.
func (r *csiRig) capabilityCalls(vol string) []csitest.Call {
	var out []csitest.Call
	for _, c := range r.d.Calls() {
		if c.Volume == vol && slices.Contains([]string{"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"}, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// (a) A driver that demands each volume's volume_context back: volumes
// applied with their csi.volumeAttributes reach their workloads, every
// publish and stage carrying them; one applied without is refused by
// the driver, with an event.
func TestCSIVolumeAttributesReachEveryCall(t *testing.T) {
	r := newCSIVolumeRig(t, csitest.Config{List: true, ListPublished: true, StageUnstage: true, RequireVolumeContext: true})
	for _, v := range []string{"v1", "v2", "bare"} {
		r.d.AddVolume(v)
	}
	vols := []store.VolumeSpec{{ID: "v1", VolumeAttributes: r.d.VolumeContext("v1")}, {ID: "v2", VolumeAttributes: r.d.VolumeContext("v2")}}
	if err := r.applySpecs(vols, map[string][]cloud.VolumeID{"w1": {"v1"}, "w2": {"v2"}}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "v1 and v2 served", func() bool { return r.served(t, "v1", "w1") && r.served(t, "v2", "w2") })
	for _, v := range []string{"v1", "v2"} {
		calls := r.capabilityCalls(v)
		if len(calls) != 3 {
			t.Errorf("%s: calls %v, want one publish, stage and node publish", v, calls)
		}
		for _, c := range calls {
			if !maps.Equal(c.VolumeContext, r.d.VolumeContext(v)) || c.VolumeContext == nil {
				t.Errorf("%s sent volume_context %v, want %v", c, c.VolumeContext, r.d.VolumeContext(v))
			}
		}
	}
	if err := r.applyUnchecked([]store.VolumeSpec{{ID: "bare"}}, map[string][]cloud.VolumeID{"w3": {"bare"}}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "bare refused", func() bool {
		return strings.Contains(r.events("bare"), "volume_context of volume bare missing or wrong")
	})
	for _, uid := range []string{"w1", "w2", "w3"} {
		if err := r.e.Ctl().DeleteWorkload(uid); err != nil {
			t.Fatal(err)
		}
	}
	r.waitFor(t, "everything unpublished", func() bool { return r.gone("v1") && r.gone("v2") })
}

// (b) A driver of raw block volumes only: a volumeMode Block volume is
// staged in a directory, published as a file the plugin makes, and
// unpublished with the file removed. A Filesystem volume is refused at
// apply, and, applied all the same, fails its attach with an event,
// retried with backoff, not in a loop.
func TestCSIBlockVolume(t *testing.T) {
	r := newCSIVolumeRig(t, csitest.Config{List: true, ListPublished: true, StageUnstage: true, BlockOnly: true})
	r.d.AddVolume("blk")
	r.d.AddVolume("fs")
	if err := r.applySpecs([]store.VolumeSpec{{ID: "blk", Block: true}}, map[string][]cloud.VolumeID{"w1": {"blk"}}); err != nil {
		t.Fatal(err)
	}
	passes := r.passes(t)
	r.waitFor(t, "blk served", func() bool { return r.served(t, "blk", "w1") })
	// The agent restarted reads the device file back as a target like
	// any other (its scan, the Mounter's records): nothing is redone.
	if err := r.e.StopAgent(csiNode); err != nil {
		t.Fatal(err)
	}
	if err := r.e.StartAgent(csiNode); err != nil {
		t.Fatal(err)
	}
	at := passes()
	r.waitFor(t, "two sync passes", func() bool { return passes() >= at+2 })
	for _, m := range []string{"NodeStageVolume", "NodePublishVolume", "ControllerPublishVolume"} {
		if n := r.d.Count(m, "blk"); n != 1 {
			t.Errorf("%d %s of blk, want 1: a device file target is a target like any other", n, m)
		}
	}
	if n := r.d.Count("NodeUnpublishVolume", "blk") + r.d.Count("ControllerUnpublishVolume", "blk"); n != 0 {
		t.Errorf("%d unpublishes of blk in use", n)
	}
	staging, target := r.paths(t, "w1", "blk")
	if fi, err := os.Lstat(staging); err != nil || !fi.IsDir() {
		t.Errorf("staging path: %v, %v; want a directory", fi, err)
	}
	if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("target: %v, %v; want the plugin's device file", fi, err)
	}
	for _, c := range r.capabilityCalls("blk") {
		if !c.Block || c.FsType != "" {
			t.Errorf("%s: want a block capability", c)
		}
	}
	if err := r.e.Ctl().DeleteWorkload("w1"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "blk unpublished", func() bool { return r.gone("blk") })
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target file is left: %v", err)
	}

	err := r.applySpecs([]store.VolumeSpec{{ID: "fs"}}, map[string][]cloud.VolumeID{"w2": {"fs"}})
	if !errors.Is(err, controller.ErrInvalid) || !strings.Contains(err.Error(), "access type mount is not supported") {
		t.Fatalf("apply of a Filesystem volume on a block-only driver: %v", err)
	}
	if _, ok, _ := r.e.Ctl().Store().Volume("fs"); ok {
		t.Error("a refused apply stored the volume")
	}
	if err := r.applyUnchecked([]store.VolumeSpec{{ID: "fs"}}, map[string][]cloud.VolumeID{"w2": {"fs"}}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "fs refused", func() bool {
		ev := r.events("fs")
		return strings.Contains(ev, "FailedAttachVolume") && strings.Contains(ev, "access type mount is not supported")
	})
	at = passes()
	r.waitFor(t, "three sync passes", func() bool { return passes() >= at+3 })
	if n := r.d.Count("ControllerPublishVolume", "fs"); n > 3 {
		t.Errorf("%d ControllerPublishVolume of fs in about three seconds: a hot loop", n)
	}
}

// (d) fsType and mountOptions reach the driver: every capability of a
// Filesystem volume carries them; a volume without has the default file
// system and no flags.
func TestCSIFsTypeAndMountOptions(t *testing.T) {
	r := newCSIVolumeRig(t, csitest.Config{List: true, ListPublished: true, StageUnstage: true, MountOnly: true})
	r.d.AddVolume("x")
	r.d.AddVolume("plain")
	flags := []string{"noatime", "nodev"}
	vols := []store.VolumeSpec{{ID: "x", FsType: "xfs", MountOptions: flags}, {ID: "plain"}}
	if err := r.applySpecs(vols, map[string][]cloud.VolumeID{"w1": {"x", "plain"}}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "both served", func() bool { return r.served(t, "x", "w1") && r.served(t, "plain", "w1") })
	for vol, want := range map[string]struct {
		fs    string
		flags []string
	}{"x": {"xfs", flags}, "plain": {"ext4", nil}} {
		calls := append(r.capabilityCalls(vol), callsNamed(r.d, "ValidateVolumeCapabilities", vol)...)
		if len(calls) != 4 {
			t.Errorf("%s: calls %v", vol, calls)
		}
		for _, c := range calls {
			if c.Block || c.FsType != want.fs || !slices.Equal(c.MountFlags, want.flags) {
				t.Errorf("%s: want fs %s, flags %v", c, want.fs, want.flags)
			}
		}
	}
	if err := r.e.Ctl().DeleteWorkload("w1"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "both unpublished", func() bool { return r.gone("x") && r.gone("plain") })
}

// callsNamed are d's calls of method about vol.
func callsNamed(d *csitest.Driver, method, vol string) []csitest.Call {
	var out []csitest.Call
	for _, c := range d.Calls() {
		if c.Method == method && c.Volume == vol {
			out = append(out, c)
		}
	}
	return out
}
