package mount

import (
	"os"

	"github.com/tether/tether/node/layout"
)

// Default returns the best mounter this process can use: NewBind when it
// runs as root and a probe bind mount inside the root works (the probe
// creates the root if needed and removes everything else it creates),
// NewSymlink otherwise. Callers should log the choice (Name).
func Default(l layout.Layout) Mounter {
	if os.Geteuid() == 0 && probeBind(l) == nil {
		return NewBind(l)
	}
	return NewSymlink(l)
}
