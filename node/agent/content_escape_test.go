package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
	"github.com/tether/tether/node/reconciler"
)

// TestSymlinkedContentNeverMounted: a symlink planted in the sim cloud's
// content tree (replacing a volume's directory, or the content root) is
// never followed to mount what it points to, outside the data directory:
// the stage fails, a FailedMount event and the log name the path, and
// nothing is mounted on the node.
func TestSymlinkedContentNeverMounted(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, content, outside string) string // returns the path the error must name
	}{
		{"volume directory", func(t *testing.T, content, outside string) string {
			dir := filepath.Join(content, "vol-a")
			must(t, os.RemoveAll(dir))
			must(t, os.Symlink(outside, dir))
			return dir
		}},
		{"content root", func(t *testing.T, content, outside string) string {
			must(t, os.Mkdir(filepath.Join(outside, "vol-a"), 0o750))
			writeSecret(t, filepath.Join(outside, "vol-a"))
			must(t, os.Rename(content, content+".real"))
			must(t, os.Symlink(outside, content))
			return content
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			outside := t.TempDir() // outside the data directory
			writeSecret(t, outside)
			r.addNode("n1")
			r.volume("vol-a", cloud.MultiNode)
			planted := c.plant(t, filepath.Join(r.data, "cloud"), outside)
			r.workload("w", "n1", "vol-a")

			var failed []events.Event
			mounted := r.mounted("n1", "w", "vol-a")
			r.eventually("a FailedMount event (or the mount)", func() bool {
				failed = r.events(events.KindNode, "n1", reconciler.EventFailedMount)
				return len(failed) > 0 || mounted()
			})
			if _, err := os.Stat(filepath.Join(r.podPath("n1", "w", "vol-a"), "secret")); err == nil {
				t.Fatalf("%s is mounted: its secret shows at %s", outside, r.podPath("n1", "w", "vol-a"))
			}
			if len(failed) == 0 {
				t.Fatal("mounted, and no FailedMount")
			}
			msg := failed[0].Message
			t.Logf("FailedMount: %s", msg)
			if !strings.Contains(msg, planted) || !strings.Contains(msg, "symlink") {
				t.Errorf("FailedMount says %q, want it to name %s as a symlink", msg, planted)
			}
			found, err := mount.Scan(r.layout("n1"), r.mounterOf("n1"))
			must(t, err)
			if len(found.Entries) > 0 {
				t.Fatalf("mounted on n1: %+v", found.Entries)
			}
			if m := r.mounters["n1"]; m.Count("stage") > 0 || m.Count("publish") > 0 {
				t.Fatalf("n1 staged %d and published %d times, want none", m.Count("stage"), m.Count("publish"))
			}
			if slices.ContainsFunc(r.mountedSources(t), func(src string) bool { return strings.HasPrefix(src, outside) }) {
				t.Fatalf("%s is mounted", outside)
			}
		})
	}
}

func writeSecret(t *testing.T, dir string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("outside the data directory"), 0o600))
}

// mountedSources lists the targets of the process's mount table under the
// rig's data directory (bind mounts only; none with symlink mounts).
func (r *rig) mountedSources(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], r.data) {
			out = append(out, f[3]+" on "+f[4])
		}
	}
	return out
}
