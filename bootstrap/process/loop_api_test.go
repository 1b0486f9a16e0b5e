package process

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// openLoopAccount opens the loop cloud's account under dir, closed at
// cleanup (after ReleaseLoop: newLoopDir's sweep runs last).
func openLoopAccount(t *testing.T, dir string) *loopAccount {
	t.Helper()
	a, err := openLoop(dir, LoopConfig{VolumeSize: 8 << 20})
	if err != nil {
		t.Fatalf("opening the loop cloud: %v (these tests need root and loop devices)", err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	return a
}

// What the loop account adds to the loop cloud is durable: the owner tag
// and the "uncommitted" tags of the disks an apply made (tagged before
// the disk exists, untagged by its commit, its deletion, or a committed
// creation); a ReadWriteMany disk is refused as invalid, a ReadOnlyMany
// one is made read-only with ext4 on it; a corrupt file refuses to open.
func TestLoopAccountTags(t *testing.T) {
	dir := newLoopDir(t)
	a := openLoopAccount(t, dir)
	if err := a.SetTag("id-1"); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "a", Mode: cloud.Exclusive}, {ID: "b", Mode: cloud.Exclusive}, {ID: "a", Mode: cloud.Exclusive}}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateVolume("c", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	for _, id := range []cloud.VolumeID{"a", "b"} {
		if !a.Uncommitted(id) {
			t.Errorf("%s is not tagged uncommitted", id)
		}
	}
	if a.Uncommitted("c") || a.Uncommitted("nope") {
		t.Error("a committed or missing disk is tagged uncommitted")
	}
	err := a.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "d", Mode: cloud.Exclusive}, {ID: "m", Mode: cloud.MultiNode}})
	if !errors.Is(err, controller.ErrInvalid) || !strings.Contains(err.Error(), "not a cluster filesystem") {
		t.Errorf("a multi-node disk: %v; want an invalid apply", err)
	}
	if _, _, ok := a.Volume("d"); ok {
		t.Error("a refused batch created a disk")
	}
	if err := a.CreateVolume("m", cloud.MultiNode); !errors.Is(err, controller.ErrInvalid) {
		t.Errorf("CreateVolume of a multi-node disk: %v; want refused", err)
	}
	if err := a.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "ro", Mode: cloud.MultiNode, ReadOnly: true}}); err != nil {
		t.Fatal(err)
	}
	img, err := a.ImagePath("ro")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", img).Output(); err != nil || strings.TrimSpace(string(out)) != "ext4" {
		t.Errorf("the ReadOnlyMany disk's image holds %q (%v), want ext4", out, err)
	}
	if ro, ok := a.VolumeReadOnly("ro"); !ro || !ok || !a.Uncommitted("ro") {
		t.Errorf("the ReadOnlyMany disk: read-only %v (exists %v), uncommitted %v", ro, ok, a.Uncommitted("ro"))
	}
	if i := slices.IndexFunc(a.Inventory().Volumes, func(v sim.InventoryVolume) bool { return v.ID == "ro" }); i < 0 || !a.Inventory().Volumes[i].ReadOnly {
		t.Errorf("the inventory does not show the ReadOnlyMany disk read-only: %+v", a.Inventory().Volumes)
	}

	// Reopened, as by the next start.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openLoopAccount(t, dir)
	if a.Tag() != "id-1" || !a.Uncommitted("a") || !a.Uncommitted("b") {
		t.Fatalf("after reopening: tag %q, a uncommitted %v, b %v", a.Tag(), a.Uncommitted("a"), a.Uncommitted("b"))
	}
	if err := a.CommitVolumes([]cloud.VolumeID{"a", "nope"}); !errors.Is(err, cloud.ErrNotFound) || !a.Uncommitted("a") {
		t.Errorf("commit with an unknown volume: %v, a uncommitted %v; want not-found and nothing committed", err, a.Uncommitted("a"))
	}
	if err := a.CommitVolume("a"); err != nil || a.Uncommitted("a") {
		t.Errorf("commit a: %v, still uncommitted %v", err, a.Uncommitted("a"))
	}
	if err := a.DeleteVolume("b"); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateVolume("b", cloud.Exclusive); err != nil || a.Uncommitted("b") {
		t.Errorf("b made again, committed: %v, uncommitted %v", err, a.Uncommitted("b"))
	}
	b, err := os.ReadFile(filepath.Join(dir, LoopAccountFile))
	if err != nil || strings.Contains(string(b), `"a"`) || strings.Contains(string(b), `"b"`) {
		t.Errorf("%s = %s, %v; want no tag left", LoopAccountFile, b, err)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LoopAccountFile), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openLoop(dir, LoopConfig{}); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "is corrupt") {
		t.Errorf("a corrupt %s: %v; want a refusal", LoopAccountFile, err)
	}
}

// Volumes, nodes and workloads applied through the API work on the loop
// cloud: a disk of the configured size is made for each new volume (and
// committed), an instance for each new node, and the workload's volume is
// attached and mounted; a multi-node volume is refused, and nothing of
// that apply is stored or made.
func TestLoopApplyThroughAPI(t *testing.T) {
	dir := newLoopDir(t)
	cfg := loopConfig(t, dir)
	cfg.Durable = true
	e := startLoop(t, cfg)
	_, _, apply := loopClient(t, e)
	wl := &messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: uid, Node: "n3",
		Volumes: []*messages.WorkloadVolumeDoc{{Name: string(vol)}}}}}
	n3 := &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: "n3"}}}

	err := apply(volumeDoc("shared", "ReadWriteMany"), volumeDoc(string(vol), ""))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `volume "shared" is ReadWriteMany, but the loop cloud's disks carry ext4, which is not a cluster filesystem`) {
		t.Fatalf("a ReadWriteMany volume: %v; want InvalidArgument saying why", err)
	}
	if vols, _ := e.Store.Volumes(); len(vols) != 0 || len(e.Account.Inventory().Volumes) != 0 {
		t.Fatalf("a refused apply left volumes %v, disks %v", vols, e.Account.Inventory().Volumes)
	}

	if err := apply(n3, volumeDoc(string(vol), "ReadWriteOnce"), wl); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Account.InstanceOf("n3"); !ok {
		t.Fatal("no instance for the new node n3")
	}
	if e.Account.Uncommitted(vol) {
		t.Error("the applied volume's disk is still tagged uncommitted")
	}
	img, err := e.Account.(*loopAccount).ImagePath(vol)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(img); err != nil || fi.Size() != cfg.Loop.VolumeSize {
		t.Fatalf("the disk's image: %v, %v; want %d bytes", fi, err, cfg.Loop.VolumeSize)
	}
	// n3 has an instance, but no agent runs for it (tether up serves
	// n1..nN): start one, as for a node added to a running tether.
	e.NodeNames = append(e.NodeNames, "n3")
	if err := e.StartAgent("n3"); err != nil {
		t.Fatal(err)
	}
	writeChecksummed(t, waitServed(t, e, "n3", uid, vol), 1)
}
