package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/node/layout"
)

// BenchmarkMountCheck measures, with 10 and 5,000 extra bind mounts in the
// process's mount table, the old way (a full parse of the table per check)
// against the new one, in one run:
//
//	check:   is a target mounted (Stage, Publish, Unstage, Unpublish ask it)
//	inspect: Inspect of a mounted target (state and source)
//	scan100: Scan of 100 mounted stages
//
// It needs root; the mounts live on a private tmpfs under a temporary
// directory and are detached, all at once, when the benchmark ends.
func BenchmarkMountCheck(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("bind mounts need root")
	}
	for _, extra := range []int{10, 5000} {
		b.Run(fmt.Sprintf("extra=%d", extra), func(b *testing.B) {
			base := b.TempDir()
			addBinds(b, filepath.Join(base, "extra"), extra)
			l, err := layout.New(filepath.Join(base, "data"))
			if err != nil {
				b.Fatal(err)
			}
			m := NewBind(l)
			src := filepath.Join(base, "src")
			mustB(b, os.MkdirAll(src, 0o750))
			var targets []string
			for i := range 100 {
				gm, err := l.GlobalMount("plug", "vol-"+strconv.Itoa(i))
				mustB(b, err)
				mustB(b, m.Stage(src, gm))
				targets = append(targets, gm)
			}
			b.Cleanup(func() {
				for _, gm := range targets {
					_ = unix.Unmount(gm, unix.MNT_DETACH)
				}
			})
			gm := targets[0]
			avoid := m.(bind).avoid()

			b.Run("check/old", func(b *testing.B) {
				for b.Loop() {
					if _, top, err := legacyLookup(gm); err != nil || top == nil {
						b.Fatal("not mounted", err)
					}
				}
			})
			b.Run("check/new", func(b *testing.B) {
				for b.Loop() {
					if ok, err := isMountPoint(nil, gm); err != nil || !ok {
						b.Fatal("not mounted", err)
					}
				}
			})
			b.Run("inspect/old", func(b *testing.B) {
				for b.Loop() {
					entries, top, err := legacyLookup(gm)
					if err != nil || top == nil {
						b.Fatal("not mounted", err)
					}
					_ = legacySourceOf(entries, top, avoid)
				}
			})
			b.Run("inspect/new", func(b *testing.B) {
				for b.Loop() {
					if st, _, err := m.Inspect(gm); err != nil || st != Mounted {
						b.Fatal(st, err)
					}
				}
			})
			b.Run("scan100/old", func(b *testing.B) {
				for b.Loop() {
					for _, gm := range targets {
						entries, top, err := legacyLookup(gm)
						if err != nil || top == nil {
							b.Fatal("not mounted", err)
						}
						_ = legacySourceOf(entries, top, avoid)
					}
				}
			})
			b.Run("scan100/new", func(b *testing.B) {
				for b.Loop() {
					if found, err := Scan(l, m); err != nil || len(found.Entries) != len(targets) {
						b.Fatal(len(found.Entries), err)
					}
				}
			})
		})
	}
}

// addBinds mounts a private tmpfs at dir and n bind mounts in it, all
// detached when b ends.
func addBinds(b *testing.B, dir string, n int) {
	b.Helper()
	mustB(b, os.MkdirAll(dir, 0o750))
	mustB(b, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"))
	b.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			b.Errorf("cleanup: %v", err)
		}
	})
	mustB(b, unix.Mount("", dir, "", unix.MS_PRIVATE, ""))
	for i := range n {
		d := filepath.Join(dir, strconv.Itoa(i))
		mustB(b, os.Mkdir(d, 0o750))
		mustB(b, unix.Mount(d, d, "", unix.MS_BIND, ""))
	}
}

func mustB(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
