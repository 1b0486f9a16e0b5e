package csitest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// Driver is the fake's state. Its methods are safe for concurrent use.
type Driver struct {
	cfg Config

	mu            sync.Mutex
	vols          map[string]*volume
	byName        map[string]string // CreateVolume name -> volume ID
	next          int
	calls         []Call
	probes, infos int // Probe and GetPluginInfo calls failed so far
}

type volume struct {
	id, name  string
	capacity  int64
	context   map[string]string            // volume_context (Config.VolumeContext)
	published map[string]publication       // node ID ->
	staged    map[string]map[string]bool   // node ID -> staging paths
	targets   map[string]map[string]target // node ID -> target path ->
	lastNode  string                       // of the last NodePublishVolume that succeeded
}

type publication struct {
	readOnly bool
	mode     spec.VolumeCapability_AccessMode_Mode
	context  map[string]string
}

// target is a volume published at a target path on a node.
type target struct {
	readOnly bool
	block    bool // access type Block: the target is a file
}

// New returns a fake driver with no volumes.
func New(cfg Config) *Driver {
	if cfg.Name == "" {
		cfg.Name = "csi.tether.test"
	}
	if cfg.RequireVolumeContext {
		cfg.VolumeContext = true
	}
	return &Driver{cfg: cfg, vols: map[string]*volume{}, byName: map[string]string{}}
}

// newVolume is a new volume, with its volume_context if the driver gives
// one.
func (d *Driver) newVolume(id, name string, capacity int64) *volume {
	v := &volume{id: id, name: name, capacity: capacity, published: map[string]publication{},
		staged: map[string]map[string]bool{}, targets: map[string]map[string]target{}}
	if d.cfg.VolumeContext {
		v.context = map[string]string{VolumeContextKey: "share-" + id}
	}
	return v
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
