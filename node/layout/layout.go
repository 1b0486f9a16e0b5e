// Package layout owns the node agent's paths on disk: which names may become
// path components, and where a workload's volume and a node's global
// (staging) mount live under the data directory, following Kubernetes'
// layout:
//
//	<root>/pods/<workload-uid>/volumes/<plugin>/<volume>   (publish)
//	<root>/plugins/<plugin>/mounts/<volume>                (stage)
//
// Every name is validated before any path is built, and every path is
// checked to be inside the root, so a hostile or mistaken name can never
// point outside the data directory.
//
// Layout never touches the filesystem: it does not create, read, resolve or
// remove anything. Paths are computed lexically; whether a component on
// disk is a symlink is the business of the code that creates and removes
// (package mount).
package layout

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Kinds of names, used in error messages.
const (
	KindVolume   = "volume ID"
	KindWorkload = "workload UID"
	KindNode     = "node name"
	KindPlugin   = "plugin name"
)

// Fixed directory names of the layout, for code that walks it (reconstruction).
const (
	PodsDir    = "pods"    // <root>/pods
	VolumesDir = "volumes" // <root>/pods/<uid>/volumes
	PluginsDir = "plugins" // <root>/plugins
	MountsDir  = "mounts"  // <root>/plugins/<plugin>/mounts
)

// MaxNameLen is the longest name ValidName accepts, in bytes.
const MaxNameLen = 128

// quoteLen is how many bytes of a bad name an error message quotes.
const quoteLen = 64

// ErrInvalidName is wrapped by every error of ValidName.
var ErrInvalidName = errors.New("layout: invalid name")

// NameError says which name is invalid and why. It wraps ErrInvalidName.
type NameError struct {
	Kind   string // one of the Kind constants
	Name   string // the refused value, untruncated
	Reason string
}

func (e *NameError) Error() string {
	q := fmt.Sprintf("%q", e.Name)
	if len(e.Name) > quoteLen {
		q = fmt.Sprintf("%q...", e.Name[:quoteLen])
	}
	return fmt.Sprintf("layout: invalid %s %s: %s", e.Kind, q, e.Reason)
}

func (e *NameError) Unwrap() error { return ErrInvalidName }

// ValidName checks one name that will become one path component: 1 to
// MaxNameLen bytes of [A-Za-z0-9._-], starting with a letter or digit. So
// ".", "..", "-x", separators, NUL, spaces and non-ASCII are all refused.
// The error is a *NameError (wrapping ErrInvalidName) naming kind.
func ValidName(kind, name string) error {
	bad := func(reason string) error { return &NameError{Kind: kind, Name: name, Reason: reason} }
	switch {
	case name == "":
		return bad("must not be empty")
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("is %d bytes long, at most %d are allowed", len(name), MaxNameLen))
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return bad("only letters, digits, '.', '_' and '-' are allowed")
		}
	}
	if !alnum(name[0]) {
		return bad("must start with a letter or digit")
	}
	return nil
}

func alnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

func nameByte(b byte) bool {
	return alnum(b) || b == '.' || b == '_' || b == '-'
}

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
