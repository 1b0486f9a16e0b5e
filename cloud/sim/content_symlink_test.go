package sim

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
)

// TestContentSymlinksNeverFollowed: a symlink as a volume's directory (to
// a directory outside the content root, or to another volume's), or as the
// content root, makes DeviceSource fail with ErrUnsafeContent naming the
// symlink, and makes creating content create nothing where it points.
func TestContentSymlinksNeverFollowed(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, dir, outside string) string // returns the symlink
	}{
		{"volume directory to outside", func(t *testing.T, dir, outside string) string {
			return replaceWithSymlink(t, filepath.Join(dir, "multi"), outside)
		}},
		{"volume directory to another volume's", func(t *testing.T, dir, _ string) string {
			return replaceWithSymlink(t, filepath.Join(dir, "multi"), filepath.Join(dir, "excl"))
		}},
		{"content root", func(t *testing.T, dir, outside string) string {
			if err := os.Mkdir(filepath.Join(outside, "multi"), contentMode); err != nil {
				t.Fatal(err)
			}
			return replaceWithSymlink(t, dir, outside)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, dir := newContentFixture(t)
			outside := t.TempDir()
			dev := f.attach(t, "multi", f.i1)
			link := c.plant(t, dir, outside)
			before := listDir(t, outside)

			src, err := f.c.DeviceSource(f.i1, dev)
			if !errors.Is(err, ErrUnsafeContent) || !strings.Contains(err.Error(), link) {
				t.Fatalf("DeviceSource = %q, %v; want ErrUnsafeContent naming %s", src, err, link)
			}
			if src != "" {
				t.Fatalf("DeviceSource returned %q with its error", src)
			}
			t.Logf("DeviceSource: %v", err)
			err = f.c.CreateVolumeChecked("multi", cloud.MultiNode)
			if !errors.Is(err, ErrUnsafeContent) {
				t.Fatalf("CreateVolumeChecked(multi) = %v, want ErrUnsafeContent", err)
			}
			if err := f.c.CreateVolumeChecked("new", cloud.MultiNode); c.name == "content root" && !errors.Is(err, ErrUnsafeContent) {
				t.Fatalf("CreateVolumeChecked(new) in a symlinked root = %v, want ErrUnsafeContent", err)
			}
			if after := listDir(t, outside); !slices.Equal(after, before) {
				t.Fatalf("files outside the content root changed: %v -> %v", before, after)
			}
		})
	}
}

// TestContentNotADirectory: a file as a volume's directory is refused too.
func TestContentNotADirectory(t *testing.T) {
	f, dir := newContentFixture(t)
	dev := f.attach(t, "multi", f.i1)
	path := filepath.Join(dir, "multi")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeContent(t, path)
	if _, err := f.c.DeviceSource(f.i1, dev); !errors.Is(err, ErrUnsafeContent) || !strings.Contains(err.Error(), path) {
		t.Fatalf("DeviceSource of a file = %v, want ErrUnsafeContent naming %s", err, path)
	}
}

// TestContentUnderSymlinkedDataDir: a symlink above the content root (the
// data directory given by a symlinked path) is the operator's choice, not
// a planted escape: content works through it.
func TestContentUnderSymlinkedDataDir(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "data")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{ContentDir: filepath.Join(link, "cloud")})
	dev := f.attach(t, "multi", f.i1)
	src, err := f.c.DeviceSource(f.i1, dev)
	if want := filepath.Join(link, "cloud", "multi"); err != nil || src != want {
		t.Fatalf("DeviceSource = %q, %v; want %q", src, err, want)
	}
}

// replaceWithSymlink replaces the directory at path by a symlink to to.
func replaceWithSymlink(t *testing.T, path, to string) string {
	t.Helper()
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, path); err != nil {
		t.Fatal(err)
	}
	return path
}
