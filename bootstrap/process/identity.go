package process

// Startup checks of a durable data directory. tether acts on its store:
// a store that lost its data and were taken as "the user wants nothing"
// would detach every volume of every running workload. So the store, the
// cloud account and the node agents' directories share one identity,
// written when tether first creates the directory, and a start that finds
// them out of agreement refuses, names the file, what it found and the flag
// that recovers (--rebuild-store, see rebuild.go), before any actor runs.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud/files/durable"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/layout"
)

// StoreFile is the durable store under the data directory.
const StoreFile = "tether.db"

// IdentityFile, in each node agent's directory, holds the identity of the
// store whose controller the agent served.
const IdentityFile = "identity"

// ErrUntrusted is matched by the error of a start that found state it cannot
// trust: a missing, empty, corrupt or foreign store next to a cloud account
// and node directories that show a tether ran here. Nothing was changed.
var ErrUntrusted = errors.New("refusing to start")

// rebuildHint is what every refusal ends with.
const rebuildHint = "restore it from a backup, or start with --rebuild-store to rebuild the desired state from what the cloud has attached and the nodes have mounted (the old file is kept aside; see docs/operating.md: Recovery)"

// newIdentity returns a fresh random identity.
func newIdentity() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// evidence is what shows that a tether ran on a data directory, besides
// its store.
type evidence struct {
	tag       string // the cloud's owner tag
	inventory sim.Inventory
	nodeIDs   map[string]string // node directory -> its identity ("" if none)
}

func (ev evidence) any() bool {
	return ev.tag != "" || !ev.inventory.Empty() || len(ev.nodeIDs) > 0
}

func (ev evidence) String() string {
	var parts []string
	if ev.tag != "" {
		parts = append(parts, fmt.Sprintf("the cloud account is tagged with identity %s", ev.tag))
	}
	if !ev.inventory.Empty() {
		parts = append(parts, fmt.Sprintf("the cloud holds %d volumes (%d attachments) and %d instances", len(ev.inventory.Volumes), ev.inventory.Attachments(), len(ev.inventory.Instances)))
	}
	if len(ev.nodeIDs) > 0 {
		// Counted here, for the refusal message only: a start that trusts
		// its store never walks every mount directory.
		mounts := 0
		for dir := range ev.nodeIDs {
			mounts += countMountDirs(dir)
		}
		parts = append(parts, fmt.Sprintf("%d node directories hold %d volume mount directories", len(ev.nodeIDs), mounts))
	}
	return strings.Join(parts, "; ")
}

// gatherEvidence reads the cloud and the node directories (under nodes);
// it changes nothing.
func gatherEvidence(nodes string, cl owner) (evidence, error) {
	ev := evidence{tag: cl.Tag(), inventory: cl.Inventory(), nodeIDs: map[string]string{}}
	entries, err := os.ReadDir(nodes)
	if errors.Is(err, fs.ErrNotExist) {
		return ev, nil
	}
	if err != nil {
		return ev, fmt.Errorf("reading %s: %w", nodes, err)
	}
	for _, d := range entries {
		if !d.IsDir() || layout.ValidName(layout.KindNode, d.Name()) != nil {
			continue
		}
		dir := filepath.Join(nodes, d.Name())
		id, err := readIdentityFile(dir)
		if err != nil {
			return ev, err
		}
		ev.nodeIDs[dir] = id
	}
	return ev, nil
}

// countMountDirs counts <dir>/pods/*/volumes/*/* and
// <dir>/plugins/*/mounts/*, for the refusal message only.
func countMountDirs(dir string) int {
	n := 0
	for _, pattern := range []string{
		filepath.Join(dir, layout.PodsDir, "*", layout.VolumesDir, "*", "*"),
		filepath.Join(dir, layout.PluginsDir, "*", layout.MountsDir, "*"),
	} {
		m, _ := filepath.Glob(pattern)
		n += len(m)
	}
	return n
}

// readIdentityFile reads <dir>/identity ("" if missing).
func readIdentityFile(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, IdentityFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the identity of node directory %s: %w", dir, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeIdentityFile writes <dir>/identity unless it already holds id.
func writeIdentityFile(dir, id string) error {
	if got, err := readIdentityFile(dir); err == nil && got == id {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, IdentityFile), []byte(id+"\n"), 0o600)
}

// openTrusted opens the store at path and checks it against the cloud and
// the node directories. A fresh directory gets a new store and identity.
// Anything else that does not add up is ErrUntrusted, and the store file
// is left as it was.
func openTrusted(path string, ev evidence, acceptRollback bool) (*store.Bolt, string, error) {
	dataDir := filepath.Dir(path)
	fi, err := os.Lstat(path)
	create := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if ev.any() {
			return nil, "", fmt.Errorf("%w: %s is missing, but %s: a tether with a store ran on %s, and starting without its desired state would detach every volume; %s", ErrUntrusted, path, ev, dataDir, rebuildHint)
		}
		create = true // a fresh data directory
	case err != nil:
		return nil, "", fmt.Errorf("store %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, "", fmt.Errorf("%w: %s is not a regular file (%s)", ErrUntrusted, path, fi.Mode().Type())
	case fi.Size() == 0:
		if ev.any() {
			return nil, "", fmt.Errorf("%w: %s is empty (0 bytes), but %s: its data was lost, and starting without the desired state would detach every volume; %s", ErrUntrusted, path, ev, rebuildHint)
		}
		// Nothing anywhere: an empty file in a fresh directory (a crash
		// during the very first start of an older tether leaves one).
		if err := os.Remove(path); err != nil {
			return nil, "", fmt.Errorf("store %s: %w", path, err)
		}
		create = true
	}
	open := func(path string) (*store.Bolt, error) {
		return store.OpenBoltWith(path, store.OpenOptions{AcceptRollback: acceptRollback})
	}
	if create {
		open = store.CreateBolt
	}
	st, err := open(path)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrInUse):
			return nil, "", err
		case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrEmpty), errors.Is(err, store.ErrRollback):
			return nil, "", fmt.Errorf("%w: %w", ErrUntrusted, err) // it says what to do
		}
		return nil, "", fmt.Errorf("%w: %s cannot be opened: %w; %s", ErrUntrusted, path, err, rebuildHint)
	}
	id, err := checkIdentity(st, path, ev)
	if err != nil {
		st.Close()
		return nil, "", err
	}
	return st, id, nil
}

// checkIdentity compares the store's identity with the evidence, and
// completes it where a part is new or predates identities (a store without
// one that holds data, next to an untagged cloud: written then).
func checkIdentity(st *store.Bolt, path string, ev evidence) (string, error) {
	id, err := st.Identity()
	if err != nil {
		return "", fmt.Errorf("%w: %s: reading its identity: %w; %s", ErrUntrusted, path, err, rebuildHint)
	}
	objs, err := st.Objects()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w; %s", ErrUntrusted, path, err, rebuildHint)
	}
	switch {
	case id == "" && ev.tag != "":
		return "", fmt.Errorf("%w: %s has no identity, but the cloud account is tagged %s: it is not the store of this data directory (copied from elsewhere, or a fresh one); %s", ErrUntrusted, path, ev.tag, rebuildHint)
	case id == "" && objs == 0 && ev.any():
		return "", fmt.Errorf("%w: %s holds nothing, but %s: its data was lost, and starting without the desired state would detach every volume; %s", ErrUntrusted, path, ev, rebuildHint)
	case id != "" && ev.tag != "" && id != ev.tag:
		return "", fmt.Errorf("%w: %s has identity %s, but the cloud account is tagged %s: the store belongs to another tether; %s", ErrUntrusted, path, id, ev.tag, rebuildHint)
	}
	for dir, nid := range ev.nodeIDs {
		switch {
		case nid == "":
		case id == "":
			return "", fmt.Errorf("%w: %s has no identity, but node directory %s was served for identity %s: it is not the store of this data directory; %s", ErrUntrusted, path, dir, nid, rebuildHint)
		case nid != id:
			return "", fmt.Errorf("%w: %s has identity %s, but node directory %s was served for identity %s: the store belongs to another tether; %s", ErrUntrusted, path, id, dir, nid, rebuildHint)
		}
	}
	if id == "" {
		id = newIdentity()
		if err := st.SetIdentity(id); err != nil {
			return "", fmt.Errorf("store %s: recording its identity: %w", path, err)
		}
	}
	return id, nil
}

// claim tags the cloud and the node directories with the store's identity,
// after the store has it.
func claim(cl owner, ev evidence, id string) error {
	if ev.tag != id {
		if err := cl.SetTag(id); err != nil {
			return err
		}
	}
	for dir := range ev.nodeIDs {
		if err := writeIdentityFile(dir, id); err != nil {
			return err
		}
	}
	return nil
}
