package csitest

import (
	"context"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
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
	return &spec.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
