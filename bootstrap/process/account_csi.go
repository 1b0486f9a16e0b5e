package process

// Any CSI driver as the cloud of an embedded tether: its controller
// plugin is the controller's provider (cloud/csi), its node plugin mounts
// for the one node (node/csinode). What a CSI driver cannot do as a cloud
// account does, it refuses clearly:
//
//   - Volumes are the driver's. tether never calls CreateVolume or
//     DeleteVolume: an operator (or the driver's own tooling) provisions
//     a volume, whose CSI volume ID is its tether name, and an apply of
//     a volume tether does not know yet is accepted only if the driver
//     has it and confirms its capability (ValidateVolumeCapabilities),
//     otherwise refused, saying so. Deleting it in tether forgets it.
//   - Nodes are the node plugins'. One node plugin serves one machine:
//     the embedded runtime runs one node per node plugin socket (n1..nN),
//     whose instance is its plugin's node ID (NodeGetInfo), given to the
//     controller's provider before the controller starts (so a restarted
//     process, or controller, never takes a node for instance-less).
//     Terminating, starting or adding instances is refused: a node is the
//     machine its plugin runs on.
//   - A plugin's max_volumes_per_node is tether's to respect (the spec
//     makes it the CO's job, and many controllers do not check it): an
//     attach that would exceed it is refused as cloud.ErrLimitReached
//     before anything is sent, counting what tether published to the
//     node and has not unpublished (its records, never the driver's
//     listing) and the attaches in flight. The driver's own
//     RESOURCE_EXHAUSTED is a failed attach like any other: nothing was
//     published, nothing is counted.
//
// tether's own file about the account, <data>/csi-account.json, holds
// the owner tag (identity.go), the driver's name (a data directory keeps
// its driver: another one is refused) and each node's node ID last seen
// (a new one is logged: volumes still published to the old ID stay so
// until unpublished).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	cloudcsi "github.com/tether/tether/cloud/csi"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
	nodecsi "github.com/tether/tether/node/csinode"
	"github.com/tether/tether/node/layout"
)

const (
	// CSIPlugin is the volume plugin in the node agent's layout with a
	// CSI driver (<node>/plugins/tether-csi/mounts/<volume>), whatever
	// the driver's name.
	CSIPlugin = "tether-csi"
	// CSIAccountFile, under the data directory, holds what tether keeps
	// about a CSI driver: the owner tag, the driver's name, the node ID.
	CSIAccountFile = "csi-account.json"
	// DefaultCSIDialTimeout bounds the wait for both plugins at start.
	DefaultCSIDialTimeout = time.Minute
	// csiNode is the one node of a CSI driver (start names nodes n1..nN).
	csiNode = cloud.NodeName("n1")
	// csiCallTimeout bounds the calls the account makes outside the
	// controller (an apply's checks, the start-up inventory).
	csiCallTimeout = 30 * time.Second
)

// CSIConfig configures a CSI driver as the cloud (Config.Cloud CloudCSI).
type CSIConfig struct {
	// ControllerSocket and NodeSocket are the unix sockets of the
	// driver's controller plugin and of the node plugin of the machine
	// tether runs on (they may be the same).
	ControllerSocket, NodeSocket string
	// NodeSockets, if set, replaces NodeSocket: node n<i+1>'s plugin
	// listens on NodeSockets[i] (several node plugins on one machine, each
	// with its own node ID: tests, the demo, chaos).
	NodeSockets []string
	// DialTimeout bounds the wait for both plugins to answer and be
	// ready at start (0: DefaultCSIDialTimeout).
	DialTimeout time.Duration
}

// csiState is the content of CSIAccountFile.
type csiState struct {
	Version int    `json:"version"`
	Tag     string `json:"tag,omitempty"`
	Driver  string `json:"driver"`
	// NodeID is n1's node ID (files written before several nodes had only
	// it); NodeIDs every node's.
	NodeID  cloud.InstanceID                    `json:"node_id"`
	NodeIDs map[cloud.NodeName]cloud.InstanceID `json:"node_ids,omitempty"`
}

// nodeIDs are the node IDs the file records, by node.
func (s csiState) nodeIDs() map[cloud.NodeName]cloud.InstanceID {
	if s.NodeIDs != nil {
		return s.NodeIDs
	}
	if s.NodeID != "" {
		return map[cloud.NodeName]cloud.InstanceID{csiNode: s.NodeID}
	}
	return nil
}

// csiAccount is a CSI driver as an Account.
type csiAccount struct {
	p     *cloudcsi.Provider
	nodes []*csiNodePlugin // n1..nN
	// dataDir holds csi-secrets/ (CSISecretsDir); "" for a controller
	// member given none: a volume with secrets then fails, saying so.
	dataDir string
	// remote: the nodes run on other machines, whose agents report their
	// plugins' node IDs into the node statuses (distributed mode's
	// controller members: OpenCSIController); nodes is empty.
	remote bool
	path   string // CSIAccountFile

	mu    sync.Mutex // guards state and its file
	state csiState

	inventory sim.Inventory // read at open
	store     atomic.Pointer[storeRef]

	limitMu  sync.Mutex
	inflight map[cloud.InstanceID]map[cloud.VolumeID]int // attaches in flight, by node ID

	attach, detach, verify atomic.Int64
}

// storeRef holds the store once it is open.
type storeRef struct{ store.Store }

var _ Account = (*csiAccount)(nil)

// openCSI dials the driver's node plugins (cfg.nodeSockets: nodes
// n1..nN), then its controller plugin with their node IDs, checks them
// against CSIAccountFile and reads the inventory. warn, if not "", is
// for the log.
func openCSI(dataDir string, cfg CSIConfig) (a *csiAccount, warn string, err error) {
	sockets := cfg.nodeSockets()
	if cfg.ControllerSocket == "" || len(sockets) == 0 {
		return nil, "", errors.New("embedded: a CSI driver needs both its controller plugin's socket and its node plugin's")
	}
	a = &csiAccount{dataDir: dataDir, path: filepath.Join(dataDir, CSIAccountFile), inflight: map[cloud.InstanceID]map[cloud.VolumeID]int{}, state: csiState{Version: 1}}
	if err := readAccountFile(a.path, "csi", &a.state); err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmpDuration(cfg.DialTimeout, DefaultCSIDialTimeout))
	defer cancel()
	if a.nodes, err = dialNodes(ctx, sockets); err != nil {
		return nil, "", err
	}
	a.p, err = cloudcsi.Dial(ctx, cfg.ControllerSocket,
		cloudcsi.WithNodeIDs(a.nodeIDs()),
		cloudcsi.WithAccessModes(a.accessOf))
	if err != nil {
		return nil, "", errors.Join(fmt.Errorf("csi controller plugin at %s: %w", cfg.ControllerSocket, err), a.closeNodes())
	}
	if warn, err = a.check(ctx); err != nil {
		return nil, "", errors.Join(err, a.Close())
	}
	return a, warn, nil
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// check compares the plugins with CSIAccountFile, records them there and
// reads the inventory.
func (a *csiAccount) check(ctx context.Context) (warn string, err error) {
	driver := a.p.Plugin().Name
	a.mu.Lock()
	defer a.mu.Unlock()
	next := a.state
	if next.Driver != "" && next.Driver != driver {
		return "", fmt.Errorf("%w: %s says this data directory ran with CSI driver %q, but the sockets serve %q: its volumes and attachments are another driver's; use the sockets of %q, or another --data-dir", ErrUntrusted, a.path, next.Driver, driver, next.Driver)
	}
	if warn, err = a.checkNodes(driver, next.nodeIDs()); err != nil {
		return "", err
	}
	ids := a.nodeIDs()
	next.Driver, next.NodeID, next.NodeIDs = driver, ids[csiNode], ids
	if !reflect.DeepEqual(next, a.state) {
		if err := a.writeLocked(next); err != nil {
			return "", err
		}
	}
	if !a.p.Listing().Verifies() {
		return warn, nil // nothing to list: the inventory stays empty
	}
	got, err := a.p.InstanceVolumes(ctx, a.instances())
	if err != nil {
		return "", fmt.Errorf("csi: listing what is published to the nodes: %w", err)
	}
	on := map[cloud.VolumeID][]cloud.NodeName{}
	for _, n := range a.nodes {
		for v := range got[n.id] {
			on[v] = append(on[v], n.name)
		}
	}
	for _, v := range sortedKeys(on) {
		// The mode is the driver's secret: a rebuilt store takes the
		// volume as ReadWriteOnce.
		a.inventory.Volumes = append(a.inventory.Volumes, sim.InventoryVolume{ID: v, Mode: cloud.Exclusive, Attached: on[v]})
	}
	return warn, nil
}

func sortedKeys[V any](m map[cloud.VolumeID]V) []cloud.VolumeID {
	out := make([]cloud.VolumeID, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// writeLocked makes next the account's state, durably. Called under mu.
func (a *csiAccount) writeLocked(next csiState) error {
	if err := writeAccountFile(a.path, "csi", next); err != nil {
		return err
	}
	a.state = next
	return nil
}

// useStore gives the account the store, once it is open: the volumes'
// access modes and the list of tether's volumes come from it.
func (a *csiAccount) useStore(st store.Store) { a.store.Store(&storeRef{st}) }

// accessOf is how a volume is used as tether's store has it: its access
// mode and whether it is ReadOnlyMany (the driver is asked for
// MULTI_NODE_READER_ONLY then), raw block or mounted and how, its
// volume_context, and its secrets, read from their file now
// (csi_volume.go: csiAccessOf); a volume the store does not have is
// exclusive and mounted, without secrets (the safer capability).
func (a *csiAccount) accessOf(_ context.Context, vol cloud.VolumeID) (cloudcsi.Access, error) {
	ref := a.store.Load()
	if ref == nil {
		return cloudcsi.Access{}, errors.New("the store is not open yet")
	}
	spec, ok, err := ref.Volume(vol)
	if err != nil || !ok {
		return cloudcsi.Access{Mode: cloud.Exclusive}, err
	}
	return csiAccessOf(a.dataDir, spec)
}

// Tag implements owner.
func (a *csiAccount) Tag() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state.Tag
}

// SetTag implements owner: durable before it returns.
func (a *csiAccount) SetTag(tag string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := a.state
	next.Tag = tag
	return a.writeLocked(next)
}

// Inventory implements owner: what was published to the node when the
// account was opened (the start-up checks and --rebuild-store read it
// then). The driver's other volumes are no sign of a tether: they were
// there before it, and so is the node plugin (no instance is listed). A
// driver that cannot list what is published (no
// LIST_VOLUMES_PUBLISHED_NODES) shows nothing here.
func (a *csiAccount) Inventory() sim.Inventory { return a.inventory }

// Devices implements Account: the agent's device paths are CSI publish
// contexts, handed to the mounter as they came (node/csinode.Devices): the
// agent stages on tether's handshake, never on the driver's listing.
func (a *csiAccount) Devices(cloud.NodeName) agent.Devices { return nodecsi.Devices{} }

// mounter is node n's mounter: its node plugin's, at the layout's paths.
func (a *csiAccount) mounter(n cloud.NodeName, root string, timeout time.Duration) (*nodecsi.Mounter, error) {
	np := a.nodeNamed(n)
	if np == nil {
		return nil, fmt.Errorf("csi: node %s has no node plugin", n)
	}
	l, err := layout.New(root)
	if err != nil {
		return nil, err
	}
	return nodecsi.NewMounter(np.plugin, l, nodecsi.MounterConfig{Plugin: CSIPlugin, Mode: a.accessOf, Timeout: timeout,
		Secrets: func(ref string) (cloudcsi.Secrets, error) { return ReadCSISecrets(a.dataDir, ref) }})
}

// describe is what tether up prints about the driver.
func (a *csiAccount) describe() string {
	return fmt.Sprintf("csi: driver %s; attachments: %s; %s", a.p.Plugin().Name, verifyMode(a.p.Listing()), a.describeNodes())
}

// verifyMode says in a line how tether checks attachments with a driver
// whose listing is l.
func verifyMode(l cloud.Listing) string {
	switch l {
	case cloud.ListingMayOverstate:
		return "verified by ListVolumes (LIST_VOLUMES_PUBLISHED_NODES: a publication gone missing is healed, an extra listed node only reported)"
	case cloud.ListingNone:
		return "tether's own records (no LIST_VOLUMES_PUBLISHED_NODES: published_node_ids not interpreted, nothing verified)"
	}
	return "verified by the listing"
}

// Close closes both connections (nothing is unpublished).
func (a *csiAccount) Close() error { return errors.Join(a.p.Close(), a.closeNodes()) }
