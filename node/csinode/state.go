package csinode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/durable"
)

// StateFile, in the node's data directory, is the Mounter's record of
// what the node plugin staged and published there.
const StateFile = "csi-mounts.json"

// bootIDFile names the machine's current boot (Linux).
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// Kinds of record.
const (
	kindStage   = "stage"
	kindPublish = "publish"
)

// record is what the Mounter knows of one target: the volume, the device
// path it was staged with (stages) or the mode it was published with
// (publishes), and whether the plugin said it was done. A record is
// written not done BEFORE every call to the plugin and done only after
// the plugin succeeded, and removed only after an unstage or unpublish
// succeeded: a crash anywhere leaves either the truth or a record not
// done, which Inspect reports Partial (to complete or to undo, both
// idempotent).
type record struct {
	Kind     string         `json:"kind"`
	Volume   cloud.VolumeID `json:"volume"`
	Device   string         `json:"device,omitempty"`
	ReadOnly bool           `json:"read_only,omitempty"`
	Done     bool           `json:"done"`
}

// state is the content of StateFile; targets are relative to the data
// directory.
type state struct {
	Version int               `json:"version"`
	BootID  string            `json:"boot_id,omitempty"`
	Targets map[string]record `json:"targets"`
}

// stateFile holds the records of one data directory, in memory and on
// disk (each change written whole and atomically before it returns). One
// process owns a data directory at a time (the embedded runtime's lock).
type stateFile struct {
	path string
	mu   sync.Mutex
	st   state
}

// loadState reads the state file under root. A machine that booted since
// it was written has lost every mount its plugin made: every record is
// then not done (bootID is the current boot's, "" if unknown). Records
// whose target no longer exists are dropped: nothing is mounted where
// there is no directory.
func loadState(root, bootID string) (*stateFile, error) {
	f := &stateFile{path: filepath.Join(root, StateFile), st: state{Version: 1, Targets: map[string]record{}}}
	b, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.st.BootID = bootID
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("csi: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("csi: %s is corrupt (%v): it records what the CSI node plugin mounted under %s; restore it, or remove it to have every mount there redone or undone (the plugin's calls are idempotent)", f.path, err, root)
	}
	rebooted := st.BootID != "" && bootID != "" && st.BootID != bootID
	for rel, r := range st.Targets {
		if _, err := os.Lstat(filepath.Join(root, rel)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if rebooted {
			r.Done = false
		}
		f.st.Targets[rel] = r
	}
	f.st.BootID = bootID
	return f, nil
}

// currentBootID reads the machine's boot ID, "" if it cannot.
func currentBootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (f *stateFile) get(rel string) (record, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.st.Targets[rel]
	return r, ok
}

// set records r for rel (or removes rel's record, when r is nil),
// durably.
func (f *stateFile) set(rel string, r *record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.st
	next.Targets = maps.Clone(f.st.Targets)
	if r == nil {
		if _, ok := next.Targets[rel]; !ok {
			return nil
		}
		delete(next.Targets, rel)
	} else {
		next.Targets[rel] = *r
	}
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	if err := writeState(f.path, append(b, '\n')); err != nil {
		return fmt.Errorf("csi: writing %s: %v: %w", f.path, err, cloud.ErrRetryable)
	}
	f.st = next
	return nil
}

// writeState replaces the state file durably (durable.WriteFile), its
// directory made first.
func writeState(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return durable.WriteFile(path, data, 0o600)
}
