package sim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestVolumeReadsGroundTruth(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "multi", f.i2)
	f.attach(t, "multi", f.i1)
	mode, at, ok := f.c.Volume("multi")
	if !ok || mode != cloud.MultiNode || !slices.Equal(at, []cloud.InstanceID{f.i1, f.i2}) {
		t.Fatalf("Volume(multi) = %v %v %v", mode, at, ok)
	}
	mode, at, ok = f.c.Volume("excl")
	if !ok || mode != cloud.Exclusive || len(at) != 0 {
		t.Fatalf("Volume(excl) = %v %v %v", mode, at, ok)
	}
	if _, _, ok := f.c.Volume("ghost"); ok {
		t.Fatal("Volume(ghost) found")
	}
}

func TestDeleteVolume(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "excl", f.i1)
	err := f.c.DeleteVolume("excl")
	if !errors.Is(err, ErrVolumeInUse) {
		t.Fatalf("delete attached: %v, want ErrVolumeInUse", err)
	}
	checkErr(t, err, cloud.KindRetryable, "excl", string(f.i1))
	if _, _, ok := f.c.Volume("excl"); !ok {
		t.Fatal("attached volume deleted")
	}
	checkErr(t, f.c.DeleteVolume("ghost"), cloud.KindNotFound, "ghost")

	if err := f.c.DeleteVolume("multi"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.c.Volume("multi"); ok {
		t.Fatal("deleted volume still there")
	}
	_, err = f.c.Attach(t.Context(), "multi", f.i2)
	checkErr(t, err, cloud.KindNotFound, "multi")
	// Created again, with another mode: the mode is the new one.
	if err := f.c.CreateVolumeChecked("multi", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := f.c.Volume("multi"); mode != cloud.Exclusive {
		t.Fatalf("recreated with mode %v", mode)
	}
}

// TestDeleteVolumeDurable: the deletion is written; a failed write keeps
// the volume.
func TestDeleteVolumeDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	mustNil(t, c.CreateVolumeChecked("a", cloud.Exclusive))
	mustNil(t, c.CreateVolumeChecked("b", cloud.MultiNode))
	mustNil(t, c.DeleteVolume("a"))
	if _, _, ok := mustOpen(t, Config{StatePath: path}).Volume("a"); ok {
		t.Fatal("deletion not written")
	}
	setAppend(c, func(*os.File, []byte) error { return errors.New("injected write failure") })
	checkErr(t, c.DeleteVolume("b"), cloud.KindRetryable, path)
	if _, _, ok := c.Volume("b"); !ok {
		t.Fatal("volume gone after a failed write")
	}
}

// An apply's disk is tagged uncommitted until CommitVolume, durably; a disk
// that existed is left as it was.
func TestUncommittedTag(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{StatePath: filepath.Join(dir, "state.json"), ContentDir: filepath.Join(dir, "content")}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateVolumeChecked("old", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	for _, id := range []cloud.VolumeID{"old", "new"} {
		if err := c.CreateVolumeUncommitted(id, cloud.MultiNode); err != nil {
			t.Fatal(err)
		}
	}
	if c.Uncommitted("old") || !c.Uncommitted("new") {
		t.Fatalf("uncommitted: old=%v new=%v, want false true", c.Uncommitted("old"), c.Uncommitted("new"))
	}
	if mode, _, _ := c.Volume("old"); mode != cloud.Exclusive {
		t.Fatalf("an existing disk changed mode to %v", mode)
	}
	if _, err := os.Stat(filepath.Join(dir, "content", "new")); err != nil {
		t.Fatalf("no content directory for the new disk: %v", err)
	}
	again, err := Open(cfg) // as after a SIGKILL
	if err != nil {
		t.Fatal(err)
	}
	if !again.Uncommitted("new") {
		t.Fatal("the tag did not survive a restart")
	}
	if err := again.CommitVolume("new"); err != nil {
		t.Fatal(err)
	}
	if again.Uncommitted("new") {
		t.Fatal("still uncommitted after CommitVolume")
	}
	if third, err := Open(cfg); err != nil || third.Uncommitted("new") {
		t.Fatalf("CommitVolume is not durable: %v", err)
	}
	if err := again.CommitVolume("nope"); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("CommitVolume of an unknown volume: %v", err)
	}
}

// The batch forms are all or nothing, with one durable write each.
func TestVolumeBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	c := mustOpen(t, Config{StatePath: path})
	mustNil(t, c.CreateVolumeChecked("old", cloud.Exclusive))
	if err := c.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "a", Mode: cloud.Exclusive}, {ID: "bad/name", Mode: cloud.Exclusive}}); err == nil {
		t.Fatal("a batch with an invalid name succeeded")
	}
	if _, _, ok := c.Volume("a"); ok {
		t.Fatal("a refused batch created a disk")
	}
	var groups int
	def := c.state.appendAndSync
	setAppend(c, func(f *os.File, data []byte) error { groups++; return def(f, data) })
	mustNil(t, c.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "a", Mode: cloud.Exclusive}, {ID: "b", Mode: cloud.MultiNode}, {ID: "old", Mode: cloud.MultiNode}, {ID: "a", Mode: cloud.MultiNode}}))
	if groups != 1 {
		t.Errorf("batch creation wrote %d groups, want 1", groups)
	}
	if mode, _, _ := c.Volume("old"); mode != cloud.Exclusive || c.Uncommitted("old") {
		t.Error("an existing disk was changed")
	}
	if mode, _, _ := c.Volume("a"); mode != cloud.Exclusive || !c.Uncommitted("a") || !c.Uncommitted("b") {
		t.Error("new disks not created as asked, tagged")
	}
	if err := c.CommitVolumes([]cloud.VolumeID{"a", "nope"}); !errors.Is(err, cloud.ErrNotFound) || !c.Uncommitted("a") {
		t.Fatalf("CommitVolumes naming an unknown volume: %v, a uncommitted %v; want ErrNotFound, a still tagged", err, c.Uncommitted("a"))
	}
	groups = 0
	mustNil(t, c.CommitVolumes([]cloud.VolumeID{"a", "b", "old"}))
	if groups != 1 || c.Uncommitted("a") || c.Uncommitted("b") {
		t.Errorf("commit: %d groups, tags a=%v b=%v; want 1, false, false", groups, c.Uncommitted("a"), c.Uncommitted("b"))
	}
	setAppend(c, func(*os.File, []byte) error { return errors.New("injected write failure") })
	checkErr(t, c.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "c", Mode: cloud.Exclusive}, {ID: "d", Mode: cloud.Exclusive}}), cloud.KindRetryable, path)
	if _, _, ok := c.Volume("c"); ok {
		t.Error("a batch whose write failed created a disk")
	}
	reopened := mustOpen(t, Config{StatePath: path})
	if got, want := snapshot(reopened), snapshot(c); !reflect.DeepEqual(world(got), world(want)) {
		t.Errorf("reopened %+v, want %+v", got, want)
	}
}
