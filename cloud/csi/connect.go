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

	"github.com/tether/tether/cloud"
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
// starting next to tether may not listen yet. A driver that is not ready
// may fail any of these calls for a while (a sidecar restarting, a
// plugin still reaching its cloud): an answer that may change
// (retryable) is asked again with backoff until ctx ends.
func identify(ctx context.Context, id spec.IdentityClient, every time.Duration) (Plugin, error) {
	wait := grpc.WaitForReady(true)
	if err := probe(ctx, id, every); err != nil {
		return Plugin{}, err
	}
	info, err := Retry(ctx, "GetPluginInfo", every, func() (*spec.GetPluginInfoResponse, error) {
		return id.GetPluginInfo(ctx, &spec.GetPluginInfoRequest{}, wait)
	})
	if err != nil {
		return Plugin{}, err
	}
	if info.GetName() == "" {
		return Plugin{}, fmt.Errorf("csi: GetPluginInfo gave no name: %w", cloud.ErrTerminal)
	}
	caps, err := Retry(ctx, "GetPluginCapabilities", every, func() (*spec.GetPluginCapabilitiesResponse, error) {
		return id.GetPluginCapabilities(ctx, &spec.GetPluginCapabilitiesRequest{}, wait)
	})
	if err != nil {
		return Plugin{}, err
	}
	p := Plugin{Name: info.GetName(), Version: info.GetVendorVersion()}
	for _, c := range caps.GetCapabilities() {
		if c.GetService().GetType() == spec.PluginCapability_Service_CONTROLLER_SERVICE {
			p.Controller = true
		}
	}
	return p, nil
}

// retryMax caps the wait between two tries of Retry.
const retryMax = 5 * time.Second

// Retry calls f until it succeeds, fails with an answer that will not
// change (not retryable: returned at once), or ctx ends (the last answer
// is in the error). The wait starts at every and doubles up to retryMax.
func Retry[R any](ctx context.Context, op string, every time.Duration, f func() (R, error)) (R, error) {
	wait := every
	for tries := 1; ; tries++ {
		r, err := f()
		if err == nil {
			return r, nil
		}
		mapped := MapError(op, err)
		if ctx.Err() != nil {
			return r, fmt.Errorf("csi: %s: the driver did not answer in time (%d tries): %w (last answer: %v)", op, tries, ctx.Err(), mapped)
		}
		if cloud.Classify(mapped) != cloud.KindRetryable && cloud.Classify(mapped) != cloud.KindThrottled {
			return r, mapped
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, fmt.Errorf("csi: %s: the driver is not ready after %d tries: %w (last answer: %v)", op, tries, ctx.Err(), mapped)
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// probe calls Probe until the driver is ready: an answer without "ready"
// or with ready true (the spec lets a driver leave it out when it is). A
// not-ready answer, FAILED_PRECONDITION (the spec's "unhealthy") and
// any retryable answer (UNAVAILABLE, INTERNAL...) are asked again with
// backoff (every, doubling up to retryMax); anything else fails.
func probe(ctx context.Context, id spec.IdentityClient, every time.Duration) error {
	wait := every
	for {
		r, err := id.Probe(ctx, &spec.ProbeRequest{}, grpc.WaitForReady(true))
		if err == nil && (r.GetReady() == nil || r.GetReady().GetValue()) {
			return nil
		}
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("csi: Probe: %w (%v)", ctx.Err(), MapError("Probe", err))
		}
		if c := status.Code(err); err != nil && c != codes.FailedPrecondition && cloud.Classify(MapError("Probe", err)) != cloud.KindRetryable {
			return MapError("Probe", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				return fmt.Errorf("csi: Probe: the driver is not ready: %w", ctx.Err())
			}
			return fmt.Errorf("csi: Probe: %w (last answer: %v)", ctx.Err(), MapError("Probe", err))
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}
