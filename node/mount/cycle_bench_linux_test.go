package mount

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tether/tether/node/layout"
)

// BenchmarkSymlinkCycle measures one volume's life on a node with the
// symlink mounter, as the agent runs it: stage, publish for a new pod,
// unpublish and unstage with their CleanEmptyParents. "walk" checks the
// parents with an lstat each (as without openat2), "openat2" with
// realDirs first: the ratio of the two is what the fast path saves.
func BenchmarkSymlinkCycle(b *testing.B) {
	for _, mode := range []struct {
		name string
		walk bool
	}{{"walk", true}, {"openat2", false}} {
		b.Run(mode.name, func(b *testing.B) {
			was := noOpenat2.Load()
			noOpenat2.Store(mode.walk)
			b.Cleanup(func() { noOpenat2.Store(was) })
			base := b.TempDir()
			l, err := layout.New(filepath.Join(base, "data"))
			mustB(b, err)
			src := filepath.Join(base, "src")
			mustB(b, os.Mkdir(src, 0o750))
			m := NewSymlink(l)
			pods := filepath.Join(l.Root(), layout.PodsDir)
			// Another pod and volume keep pods/ and mounts/ from being
			// removed at each cycle, as on a node with work.
			other, err := l.PodVolume("other", "plug", "other")
			mustB(b, err)
			mustB(b, m.Publish(src, other, false))
			i := 0
			for b.Loop() {
				i++
				vol, uid := "vol-"+strconv.Itoa(i), "pod-"+strconv.Itoa(i)
				gm, err := l.GlobalMount("plug", vol)
				mustB(b, err)
				pv, err := l.PodVolume(uid, "plug", vol)
				mustB(b, err)
				mustB(b, m.Stage(src, gm))
				mustB(b, m.Publish(gm, pv, false))
				mustB(b, m.Unpublish(pv))
				mustB(b, CleanEmptyParents(l, pv, pods))
				mustB(b, m.Unstage(gm))
				mustB(b, CleanEmptyParents(l, gm, l.Root()))
			}
		})
	}
}
