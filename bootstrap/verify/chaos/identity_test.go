package chaos

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Identities tells a mount read back from one redone at the same path: the
// demo's proof that a restarted agent redid nothing.
func TestIdentitiesSeeARedoneMount(t *testing.T) {
	for _, name := range []string{"symlink", "default"} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			l, err := layout.New(filepath.Join(base, "data"))
			if err != nil {
				t.Fatal(err)
			}
			m := mount.NewSymlink(l)
			if name == "default" {
				m = mount.Default(l) // bind mounts as root
			}
			t.Cleanup(func() {
				if err := agent.Teardown(l.Root(), m); err != nil {
					t.Error(err)
				}
			})
			src := filepath.Join(base, "disk")
			must(t, os.Mkdir(src, 0o700))
			stage, err := l.GlobalMount("p", "v1")
			must(t, err)
			pub, err := l.PodVolume("w1", "p", "v1")
			must(t, err)
			must(t, m.Stage(src, stage))
			must(t, m.Publish(stage, pub, false))

			before, err := Identities(l.Root(), m)
			must(t, err)
			again, err := Identities(l.Root(), m)
			must(t, err)
			if len(before) != 2 || !maps.Equal(before, again) {
				t.Fatalf("identities %v then %v, want the same two", before, again)
			}
			must(t, m.Unpublish(pub))
			must(t, m.Publish(stage, pub, false))
			after, err := Identities(l.Root(), m)
			must(t, err)
			rel, _ := filepath.Rel(l.Root(), pub)
			if after[rel] == "" || after[rel] == before[rel] {
				t.Fatalf("%s redone, identity %q before and %q after (%s)", rel, before[rel], after[rel], m.Name())
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
