// Package csitest is a stateful fake CSI driver for tests: Identity,
// Controller and Node services over one in-memory state of volumes, the
// nodes they are published to, and their staging and target paths on
// each node. Serve serves it on a unix socket with csi-test's driver
// package. It checks requests as the CSI spec asks (csi-test's sanity
// suite passes against it, see sanity_test.go) and answers with the spec's
// codes, which is what tether's CSI client is tested against. "Mounting"
// creates and removes the target directory, nothing more. Calls logs the
// calls about volumes it received, the ground truth of what a CO asked.
// Listen serves it outside a test (csifake, a command to run tether up
// against by hand).
//
// csi-test v5 no longer ships its stateful mock driver (mock/service), only
// the server plumbing (driver) and gomock stubs; this package stands in for
// the former.
package csitest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/driver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Config of a fake driver. The zero value is a controller with
// PUBLISH_UNPUBLISH_VOLUME and CREATE_DELETE_VOLUME and no way to verify
// attachments, and no nodes.
type Config struct {
	// Name is GetPluginInfo's name (default "csi.tether.test").
	Name string
	// Nodes are the node IDs the controller knows, with each one's
	// max_volumes_per_node (0: no limit).
	Nodes map[string]int64
	// NoController: GetPluginCapabilities leaves out CONTROLLER_SERVICE.
	NoController bool
	// NoPublish: the controller lacks PUBLISH_UNPUBLISH_VOLUME.
	NoPublish bool
	// NoPublishReadOnly: the controller lacks PUBLISH_READONLY, and
	// refuses a ControllerPublishVolume with readonly (INVALID_ARGUMENT).
	NoPublishReadOnly bool
	// Unsupported are access modes the driver does not support:
	// ValidateVolumeCapabilities does not confirm them, saying so, and
	// ControllerPublishVolume, NodeStageVolume and NodePublishVolume
	// refuse them (INVALID_ARGUMENT).
	Unsupported []spec.VolumeCapability_AccessMode_Mode
	// List: LIST_VOLUMES; ListPublished adds LIST_VOLUMES_PUBLISHED_NODES.
	List, ListPublished bool
	// GetVolume: GET_VOLUME (ControllerGetVolume).
	GetVolume bool
	// StageUnstage: the node offers STAGE_UNSTAGE_VOLUME.
	StageUnstage bool
	// MultiAttach: a single-node volume may be published to several
	// nodes (a multi-attach disk) instead of FAILED_PRECONDITION.
	MultiAttach bool
	// PageSize: ListVolumes entries per page when the request sets no
	// max_entries (0: all).
	PageSize int
	// Before, if set, runs at the start of every call with its method's
	// name ("ControllerPublishVolume") and the call's context: it may
	// block, and an error it returns is the call's answer.
	Before func(ctx context.Context, method string) error
}

// Driver is the fake's state. Its methods are safe for concurrent use.
type Driver struct {
	cfg Config

	mu     sync.Mutex
	vols   map[string]*volume
	byName map[string]string // CreateVolume name -> volume ID
	next   int
	calls  []Call
}

type volume struct {
	id, name  string
	capacity  int64
	published map[string]publication     // node ID ->
	staged    map[string]map[string]bool // node ID -> staging paths
	targets   map[string]map[string]bool // node ID -> target path -> read-only
}

type publication struct {
	readOnly bool
	mode     spec.VolumeCapability_AccessMode_Mode
	context  map[string]string
}

// New returns a fake driver with no volumes.
func New(cfg Config) *Driver {
	if cfg.Name == "" {
		cfg.Name = "csi.tether.test"
	}
	return &Driver{cfg: cfg, vols: map[string]*volume{}, byName: map[string]string{}}
}

func newVolume(id, name string, capacity int64) *volume {
	return &volume{id: id, name: name, capacity: capacity, published: map[string]publication{},
		staged: map[string]map[string]bool{}, targets: map[string]map[string]bool{}}
}

// AddVolume creates a volume whose ID (and name) is id, as if created
// outside tether; an existing one is left alone.
func (d *Driver) AddVolume(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vols[id] == nil {
		d.vols[id] = newVolume(id, id, 1<<30)
		d.byName[id] = id
	}
}

// Publish publishes vol to node directly, read-write, with no checks (an
// attachment made by someone else). It reports false if vol is unknown.
func (d *Driver) Publish(vol, node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[vol]
	if v == nil {
		return false
	}
	v.published[node] = publication{mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, context: d.publishContext(v, node)}
	return true
}

// PublishedTo lists the nodes vol is published to, sorted.
func (d *Driver) PublishedTo(vol string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.publishedTo(vol)
}

func (d *Driver) publishedTo(vol string) []string {
	v := d.vols[vol]
	if v == nil {
		return nil
	}
	var out []string
	for n := range v.published {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Staged lists vol's staging paths on node, sorted.
func (d *Driver) Staged(vol, node string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.vols[vol]; v != nil {
		return sortedKeys(v.staged[node])
	}
	return nil
}

// Targets lists vol's target paths on node, sorted.
func (d *Driver) Targets(vol, node string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.vols[vol]; v != nil {
		return sortedKeys(v.targets[node])
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (d *Driver) before(ctx context.Context, method string) error {
	if d.cfg.Before == nil {
		return nil
	}
	return d.cfg.Before(ctx, method)
}

// Serve serves the driver's Identity and Controller services, and the
// Node service of node ID nodeID unless it is "", on a new unix socket in
// a new temporary directory, and returns the socket's path. Server,
// socket and directory go in t.Cleanup.
func (d *Driver) Serve(t testing.TB, nodeID string) string {
	t.Helper()
	// Not t.TempDir: a socket path is limited to about 108 bytes.
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")
	stop, err := d.Listen(socket, nodeID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return socket
}

// Listen serves as Serve does, on a new unix socket at socket, outside a
// test (a fake driver run by hand). stop stops the server; the socket
// file is the caller's to remove.
func (d *Driver) Listen(socket, nodeID string) (stop func(), err error) {
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	servers := &driver.CSIDriverServers{Identity: identity{d: d}, Controller: controller{d: d}}
	if nodeID != "" {
		servers.Node = node{d: d, id: nodeID}
	}
	srv := driver.NewCSIDriver(servers)
	if err := srv.Start(lis); err != nil {
		_ = lis.Close()
		return nil, err
	}
	// csi-test's Start returns before its goroutine calls Serve, and that
	// goroutine panics if Stop came first ("the server has been stopped").
	// Only a serving server answers a call, so wait for one answer.
	if err := awaitServing(socket); err != nil {
		srv.Close()
		return nil, err
	}
	return srv.Stop, nil
}

// awaitServing returns once the gRPC server on socket answers a call (to
// a method no server has, so no service and no hook sees it), or an error
// after 10 s.
func awaitServing(socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = conn.Invoke(ctx, "/tether.csitest.Probe/Serving", &emptypb.Empty{}, &emptypb.Empty{}, grpc.WaitForReady(true))
	if status.Code(err) == codes.Unimplemented {
		return nil
	}
	return fmt.Errorf("csitest: the server on %s does not answer: %v", socket, err)
}
