package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud/files/durable"
	"github.com/tether/tether/node/layout"
)

// epochFile, under the agent's data directory, counts its starts.
const epochFile = "agent-epoch"

// nextEpoch reads the agent's start count, adds one, and writes it back
// durably (durable.WriteFile: the directory is synced too, so that a
// crash cannot bring an older count back) before returning it.
func nextEpoch(l layout.Layout) (uint64, error) {
	path := filepath.Join(l.Root(), epochFile)
	var epoch uint64
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) == 8:
		epoch = binary.BigEndian.Uint64(b)
	case err == nil:
		return 0, fmt.Errorf("%s: corrupt (%d bytes)", path, len(b))
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	epoch++
	if err := os.MkdirAll(l.Root(), 0o750); err != nil {
		return 0, err
	}
	var b8 [8]byte
	binary.BigEndian.PutUint64(b8[:], epoch)
	if err := durable.WriteFile(path, b8[:], 0o600); err != nil {
		return 0, err
	}
	return epoch, nil
}
