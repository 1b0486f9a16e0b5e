package csi

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// DefaultProbeInterval is how long Connect waits between two Probe calls
// while the driver says it is not ready.
const DefaultProbeInterval = 500 * time.Millisecond

// Plugin is what a driver's Identity service says about it.
type Plugin struct {
	Name    string // GetPluginInfo's name ("ebs.csi.aws.com")
	Version string
	// Controller: GetPluginCapabilities lists CONTROLLER_SERVICE.
	Controller bool
}

// Connect opens a connection to the CSI driver listening on the unix
// socket at socket, waits (within ctx) until the socket accepts and Probe
// says the driver is ready (asking again every probeEvery, or
// DefaultProbeInterval if 0), and reads the driver's identity. The
// connection is the caller's to close; Connect closes it if it fails.
func Connect(ctx context.Context, socket string, probeEvery time.Duration) (*grpc.ClientConn, Plugin, error) {
	abs, err := filepath.Abs(socket)
	if err != nil {
		return nil, Plugin{}, fmt.Errorf("csi: socket %q: %w", socket, err)
	}
	conn, err := grpc.NewClient("unix://"+abs, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, Plugin{}, fmt.Errorf("csi: socket %s: %w", abs, err)
	}
	p, err := identify(ctx, spec.NewIdentityClient(conn), cmp.Or(probeEvery, DefaultProbeInterval))
	if err != nil {
		_ = conn.Close() // the identity error is the one to report
		return nil, Plugin{}, fmt.Errorf("csi: driver at %s: %w", abs, err)
	}
	return conn, p, nil
}

// identify waits for the driver to be ready, then asks its name and
// services. Every call waits for the socket (WaitForReady): a driver
// starting next to tether may not listen yet.
func identify(ctx context.Context, id spec.IdentityClient, every time.Duration) (Plugin, error) {
	wait := grpc.WaitForReady(true)
	if err := probe(ctx, id, every); err != nil {
		return Plugin{}, err
	}
	info, err := id.GetPluginInfo(ctx, &spec.GetPluginInfoRequest{}, wait)
	if err != nil {
		return Plugin{}, MapError("GetPluginInfo", err)
	}
	caps, err := id.GetPluginCapabilities(ctx, &spec.GetPluginCapabilitiesRequest{}, wait)
	if err != nil {
		return Plugin{}, MapError("GetPluginCapabilities", err)
	}
	p := Plugin{Name: info.GetName(), Version: info.GetVendorVersion()}
	for _, c := range caps.GetCapabilities() {
		if c.GetService().GetType() == spec.PluginCapability_Service_CONTROLLER_SERVICE {
			p.Controller = true
		}
	}
	return p, nil
}

// probe calls Probe until the driver is ready: an answer without "ready"
// or with ready true (the spec lets a driver leave it out when it is). A
// not-ready answer, FAILED_PRECONDITION (the spec's "unhealthy") and
// UNAVAILABLE are asked again after every; anything else fails.
func probe(ctx context.Context, id spec.IdentityClient, every time.Duration) error {
	for {
		r, err := id.Probe(ctx, &spec.ProbeRequest{}, grpc.WaitForReady(true))
		if err == nil && (r.GetReady() == nil || r.GetReady().GetValue()) {
			return nil
		}
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("csi: Probe: %w (%v)", ctx.Err(), MapError("Probe", err))
		}
		if c := status.Code(err); err != nil && c != codes.FailedPrecondition && c != codes.Unavailable {
			return MapError("Probe", err)
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				return fmt.Errorf("csi: Probe: the driver is not ready: %w", ctx.Err())
			}
			return fmt.Errorf("csi: Probe: %w (last answer: %v)", ctx.Err(), MapError("Probe", err))
		case <-t.C:
		}
	}
}
