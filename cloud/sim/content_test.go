package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
)

func newContentFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "content") // created by CreateVolume
	return newFixture(t, Config{ContentDir: dir}), dir
}

func TestContentDirCreated(t *testing.T) {
	f, dir := newContentFixture(t)
	for _, vol := range []string{"excl", "multi"} {
		fi, err := os.Stat(filepath.Join(dir, vol))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != contentMode {
			t.Fatalf("content dir of %s: %v, %v", vol, fi, err)
		}
	}
	// Idempotent, and keeps what is inside.
	writeContent(t, filepath.Join(dir, "excl", "f"))
	f.c.CreateVolume("excl", cloud.Exclusive)
	if err := f.c.CreateVolumeChecked("excl", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "excl", "f")); err != nil {
		t.Fatalf("content lost on re-create: %v", err)
	}
}

func TestContentInvalidID(t *testing.T) {
	f, dir := newContentFixture(t)
	before := listDir(t, filepath.Dir(dir))

	err := f.c.CreateVolumeChecked("../escape", cloud.MultiNode)
	if !errors.Is(err, names.ErrInvalidName) {
		t.Fatalf("CreateVolumeChecked(../escape) = %v, want names.ErrInvalidName", err)
	}
	if _, ok := f.c.vols["../escape"]; ok {
		t.Fatal("CreateVolumeChecked created a volume with an invalid ID")
	}
	// CreateVolume keeps its old behaviour (the volume exists) but makes no
	// content for it, and DeviceSource builds no path from the ID.
	f.c.CreateVolume("../escape", cloud.MultiNode)
	dev := f.attach(t, "../escape", f.i1)
	if src, err := f.c.DeviceSource(f.i1, dev); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("DeviceSource of an invalid ID = %q, %v; want ErrNotFound", src, err)
	}
	if after := listDir(t, filepath.Dir(dir)); !slices.Equal(after, before) {
		t.Fatalf("files around the content dir changed: %v -> %v", before, after)
	}
}

func TestDeviceSource(t *testing.T) {
	f, dir := newContentFixture(t)
	want := filepath.Join(dir, "multi")
	dev1 := f.attach(t, "multi", f.i1)
	dev2 := f.attach(t, "multi", f.i2)
	for inst, dev := range map[cloud.InstanceID]string{f.i1: dev1, f.i2: dev2} {
		if got, err := f.c.DeviceSource(inst, dev); err != nil || got != want {
			t.Fatalf("DeviceSource(%s, %s) = %q, %v; want %q", inst, dev, got, err, want)
		}
	}
	if got := f.c.Calls().Calls; len(got) != 1 || got[MethodAttach] != 2 {
		t.Fatalf("DeviceSource was counted as a call: %v", got)
	}
	for _, c := range []struct {
		inst cloud.InstanceID
		dev  string
	}{{f.i3, dev1}, {f.i1, "/dev/xvdzz"}, {"i-nope", dev1}} {
		_, err := f.c.DeviceSource(c.inst, c.dev)
		checkErr(t, err, cloud.KindNotFound, string(c.inst), c.dev)
	}

	if err := f.c.Detach(context.Background(), "multi", f.i1); err != nil {
		t.Fatal(err)
	}
	_, err := f.c.DeviceSource(f.i1, dev1)
	checkErr(t, err, cloud.KindNotFound, string(f.i1))
	if err := f.c.Terminate(f.i2); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.DeviceSource(f.i2, dev2)
	checkErr(t, err, cloud.KindNotFound, string(f.i2))
}

func TestDeviceSourceWithoutContentDir(t *testing.T) {
	f := newFixture(t, Config{})
	dev := f.attach(t, "excl", f.i1)
	_, err := f.c.DeviceSource(f.i1, dev)
	checkErr(t, err, cloud.KindNotFound, "ContentDir")
}

// TestContentSurvivesReattach: data written on one instance is there when
// the volume is attached to another, in the same directory.
func TestContentSurvivesReattach(t *testing.T) {
	f, _ := newContentFixture(t)
	dev := f.attach(t, "excl", f.i1)
	src1, err := f.c.DeviceSource(f.i1, dev)
	if err != nil {
		t.Fatal(err)
	}
	writeContent(t, filepath.Join(src1, "data"))
	if err := f.c.Detach(context.Background(), "excl", f.i1); err != nil {
		t.Fatal(err)
	}
	dev = f.attach(t, "excl", f.i2)
	src2, err := f.c.DeviceSource(f.i2, dev)
	if err != nil || src2 != src1 {
		t.Fatalf("DeviceSource after re-attach = %q, %v; want %q", src2, err, src1)
	}
	if b, err := os.ReadFile(filepath.Join(src2, "data")); err != nil || string(b) != "payload" {
		t.Fatalf("content after re-attach = %q, %v", b, err)
	}
}

func writeContent(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("payload"), 0o640); err != nil {
		t.Fatal(err)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVirtualContent: with VirtualContent the contents are named, never
// made, and DeviceSource answers for attached volumes only, as without it.
func TestVirtualContent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "content")
	f := newFixture(t, Config{ContentDir: dir, VirtualContent: true})
	if err := f.c.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "v1", Mode: cloud.Exclusive}, {ID: "v2", Mode: cloud.Exclusive}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("content root: %v, want nothing made", err)
	}
	if !f.c.VirtualContent() {
		t.Fatal("VirtualContent() = false")
	}
	dev := f.attach(t, "v1", f.i1)
	if got, err := f.c.DeviceSource(f.i1, dev); err != nil || got != filepath.Join(dir, "v1") {
		t.Fatalf("DeviceSource = %q, %v; want v1's directory named", got, err)
	}
	_, err := f.c.DeviceSource(f.i2, dev)
	checkErr(t, err, cloud.KindNotFound, string(f.i2))
	if New(Config{VirtualContent: true}).VirtualContent() {
		t.Fatal("VirtualContent without a content root")
	}
}
