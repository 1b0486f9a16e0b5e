package csitest

import (
	"context"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type identity struct {
	spec.UnimplementedIdentityServer
	d *Driver
}

func (s identity) GetPluginInfo(ctx context.Context, _ *spec.GetPluginInfoRequest) (*spec.GetPluginInfoResponse, error) {
	if err := s.d.before(ctx, "GetPluginInfo"); err != nil {
		return nil, err
	}
	if err := s.d.notReady(&s.d.infos, s.d.cfg.InfoFailures, "GetPluginInfo"); err != nil {
		return nil, err
	}
	return &spec.GetPluginInfoResponse{Name: s.d.cfg.Name, VendorVersion: "0.0.1"}, nil
}

func (s identity) GetPluginCapabilities(ctx context.Context, _ *spec.GetPluginCapabilitiesRequest) (*spec.GetPluginCapabilitiesResponse, error) {
	if err := s.d.before(ctx, "GetPluginCapabilities"); err != nil {
		return nil, err
	}
	r := &spec.GetPluginCapabilitiesResponse{}
	if !s.d.cfg.NoController {
		r.Capabilities = append(r.Capabilities, &spec.PluginCapability{Type: &spec.PluginCapability_Service_{
			Service: &spec.PluginCapability_Service{Type: spec.PluginCapability_Service_CONTROLLER_SERVICE}}})
	}
	return r, nil
}

func (s identity) Probe(ctx context.Context, _ *spec.ProbeRequest) (*spec.ProbeResponse, error) {
	if err := s.d.before(ctx, "Probe"); err != nil {
		return nil, err
	}
	if err := s.d.notReady(&s.d.probes, s.d.cfg.ProbeFailures, "Probe"); err != nil {
		return nil, err
	}
	return &spec.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// notReady fails (UNAVAILABLE) the first n calls of method, counted in
// *failed (Config.ProbeFailures, Config.InfoFailures): a driver still
// starting.
func (d *Driver) notReady(failed *int, n int, method string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if *failed >= n {
		return nil
	}
	*failed++
	return status.Errorf(codes.Unavailable, "%s: the driver is not ready yet (%d of %d failures)", method, *failed, n)
}
