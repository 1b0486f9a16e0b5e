package layout

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tether/tether/cloud/files/names"
)

// Kinds of names, used in error messages (package names holds the rules).
const (
	KindVolume   = names.KindVolume
	KindWorkload = names.KindWorkload
	KindNode     = names.KindNode
	KindPlugin   = names.KindPlugin
)

// Fixed directory names of the layout, for code that walks it (reconstruction).
const (
	PodsDir    = "pods"    // <root>/pods
	VolumesDir = "volumes" // <root>/pods/<uid>/volumes
	PluginsDir = "plugins" // <root>/plugins
	MountsDir  = "mounts"  // <root>/plugins/<plugin>/mounts
)

// The name rules live in package names, shared with the controller and
// the cloud; these are their names here.
const MaxNameLen = names.MaxNameLen

// ErrInvalidName is wrapped by every error of ValidName.
var ErrInvalidName = names.ErrInvalidName

// NameError says which name is invalid and why (names.NameError).
type NameError = names.NameError

// ValidName is names.ValidName.
func ValidName(kind, name string) error { return names.ValidName(kind, name) }

// Layout computes paths under one data directory. The zero Layout has no
// root: every path method fails and Contains is always false.
type Layout struct {
	root string // absolute, clean, never "/"
}

// New returns the layout rooted at root, made absolute (filepath.Abs) and
// clean. An empty root or the filesystem root "/" is refused: the data
// directory must be a directory of its own. New creates nothing.
func New(root string) (Layout, error) {
	if root == "" {
		return Layout{}, errors.New("layout: empty data directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Layout{}, fmt.Errorf("layout: data directory %q: %w", root, err)
	}
	abs = filepath.Clean(abs)
	if !filepath.IsAbs(abs) || abs == string(filepath.Separator) {
		return Layout{}, fmt.Errorf("layout: data directory %q: must be an absolute path other than /", root)
	}
	return Layout{root: abs}, nil
}

// Root returns the data directory (absolute and clean; "" for the zero Layout).
func (l Layout) Root() string { return l.root }

// PodDir returns <root>/pods/<uid>.
func (l Layout) PodDir(uid string) (string, error) {
	if err := ValidName(KindWorkload, uid); err != nil {
		return "", err
	}
	return l.join(PodsDir, uid)
}

// PodVolume returns <root>/pods/<uid>/volumes/<plugin>/<vol>, where a
// workload sees a volume (the publish target).
func (l Layout) PodVolume(uid, plugin, vol string) (string, error) {
	if err := validAll(KindWorkload, uid, KindPlugin, plugin, KindVolume, vol); err != nil {
		return "", err
	}
	return l.join(PodsDir, uid, VolumesDir, plugin, vol)
}

// GlobalMount returns <root>/plugins/<plugin>/mounts/<vol>, the node's one
// mount of a volume that publishes share (the stage target).
func (l Layout) GlobalMount(plugin, vol string) (string, error) {
	if err := validAll(KindPlugin, plugin, KindVolume, vol); err != nil {
		return "", err
	}
	return l.join(PluginsDir, plugin, MountsDir, vol)
}

// Contains reports whether path, cleaned, is the root or below it. It is
// lexical: symlinks are not resolved. A relative path is never contained.
func (l Layout) Contains(path string) bool {
	if l.root == "" || !filepath.IsAbs(path) {
		return false
	}
	p := filepath.Clean(path)
	return p == l.root || strings.HasPrefix(p, l.root+string(filepath.Separator))
}

// join builds a path below the root and checks it, as a second line of
// defence behind ValidName.
func (l Layout) join(elem ...string) (string, error) {
	p := filepath.Join(append([]string{l.root}, elem...)...)
	if p == l.root || !l.Contains(p) {
		return "", fmt.Errorf("layout: %q is not below the data directory %q", p, l.root)
	}
	return p, nil
}

// validAll validates pairs of (kind, name) in order.
func validAll(kindsAndNames ...string) error {
	for i := 0; i+1 < len(kindsAndNames); i += 2 {
		if err := ValidName(kindsAndNames[i], kindsAndNames[i+1]); err != nil {
			return err
		}
	}
	return nil
}
