package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether/tether/node/layout"
)

// epochFile, under the agent's data directory, counts its starts.
const epochFile = "agent-epoch"

// nextEpoch reads the agent's start count, adds one, and writes it back
// durably (temporary file, fsync, rename) before returning it.
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
	tmp, err := os.CreateTemp(l.Root(), ".epoch-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	if err := binary.Write(tmp, binary.BigEndian, epoch); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	return epoch, os.Rename(tmp.Name(), path)
}
