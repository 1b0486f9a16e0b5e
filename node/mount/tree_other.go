//go:build !linux

package mount

import (
	"io/fs"

	"github.com/tether/tether/node/layout"
)

// tree holds nothing where there is no openat2(2): the mounters use the
// path-by-path code.
type tree struct{}

func newTree(layout.Layout) *tree { return nil }

func (*tree) link(*opc, string, string, func(*opc, string) (string, fs.FileInfo, error)) error {
	return errNoTree
}

func (*tree) unlink(*opc, string, bool) error { return errNoTree }
