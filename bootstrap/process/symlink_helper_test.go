package process

import (
	"path/filepath"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// useSymlinks makes cfg's agents mount with symlinks (no privileges, no
// mount table to clean) and tears down what they leave under
// cfg.DataDir/nodes when the test ends, even if it fails.
func useSymlinks(t *testing.T, cfg *Config) {
	t.Helper()
	dir := cfg.DataDir
	cfg.WrapMounter = func(n cloud.NodeName, _ mount.Mounter) mount.Mounter {
		l, err := layout.New(filepath.Join(dir, "nodes", string(n)))
		if err != nil {
			t.Fatal(err)
		}
		return mount.NewSymlink(l)
	}
	t.Cleanup(func() { teardownNodes(t, dir, mount.NewSymlink) })
}
