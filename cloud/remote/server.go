package remote

import (
	"context"
	"math"
	"net"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// Server serves one cloud.Provider over gRPC (Serve), and the sim cloud's
// admin side with it (ServeSim).
type Server struct {
	grpc    *grpc.Server
	done    chan struct{} // closed when Serve has returned
	stop    sync.Once
	senders sync.WaitGroup // of the watches' senders (watch.go)
	admin   *admin         // ServeSim's; nil for Serve
}

// Serve serves p on lis until Stop. It returns at once; the listener is
// the server's from then on (Stop closes it).
func Serve(lis net.Listener, p cloud.Provider, opts ...grpc.ServerOption) *Server {
	return start(lis, opts, func(g *grpc.Server, _ *Server) {
		messages.RegisterCloudServer(g, &service{p: p})
	})
}

// ServeSim is Serve for the sim cloud c, with its admin side (the SimAdmin
// service: admin.go, watch.go) on the same listener and options, so with
// the same TLS. Its watches queue up to DefaultWatchQueue changes each.
func ServeSim(lis net.Listener, c *sim.Cloud, opts ...grpc.ServerOption) *Server {
	return serveSim(lis, c, DefaultWatchQueue, opts...)
}

// serveSim is ServeSim with watches queueing up to queue changes.
func serveSim(lis net.Listener, c *sim.Cloud, queue int, opts ...grpc.ServerOption) *Server {
	return start(lis, opts, func(g *grpc.Server, s *Server) {
		messages.RegisterCloudServer(g, &service{p: c})
		s.admin = &admin{c: c, queue: max(queue, 1), senders: &s.senders}
		messages.RegisterSimAdminServer(g, s.admin)
	})
}

// start serves on lis the services register registers.
func start(lis net.Listener, opts []grpc.ServerOption, register func(*grpc.Server, *Server)) *Server {
	// Stop waits for the handlers, which return once cancelled.
	opts = append(slices.Clip(opts), grpc.WaitForHandlers(true))
	s := &Server{grpc: grpc.NewServer(opts...), done: make(chan struct{})}
	register(s.grpc, s)
	go func() {
		defer close(s.done)
		_ = s.grpc.Serve(lis) // returns nil after Stop; any other error ends serving all the same
	}()
	return s
}

// Stop closes the listener and every connection at once and cancels the
// calls in flight (their clients see an unknown outcome; calls the
// provider has sent go on) and the watches (their clients see an error),
// then waits for the serving goroutine and for the handlers, which return
// once cancelled. It may be called more than once.
func (s *Server) Stop() {
	s.stop.Do(s.grpc.Stop)
	<-s.done
	s.senders.Wait()
}

// service implements messages.CloudServer over a Provider, passing each
// request's context to the provider.
type service struct {
	messages.UnimplementedCloudServer
	p cloud.Provider
}

func (s *service) InstanceID(ctx context.Context, r *messages.InstanceIDRequest) (*messages.InstanceIDResponse, error) {
	id, err := s.p.InstanceID(ctx, cloud.NodeName(r.GetNode()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &messages.InstanceIDResponse{InstanceId: string(id)}, nil
}

func (s *service) Attach(ctx context.Context, r *messages.CloudAttachRequest) (*messages.CloudAttachResponse, error) {
	dev, err := s.p.Attach(ctx, cloud.VolumeID(r.GetVolumeId()), cloud.InstanceID(r.GetInstanceId()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &messages.CloudAttachResponse{DevicePath: dev}, nil
}

func (s *service) Detach(ctx context.Context, r *messages.CloudDetachRequest) (*messages.CloudDetachResponse, error) {
	if err := s.p.Detach(ctx, cloud.VolumeID(r.GetVolumeId()), cloud.InstanceID(r.GetInstanceId())); err != nil {
		return nil, toStatus(err)
	}
	return &messages.CloudDetachResponse{}, nil
}

func (s *service) VolumesAreAttached(ctx context.Context, r *messages.VolumesAreAttachedRequest) (*messages.VolumesAreAttachedResponse, error) {
	query := make(map[cloud.InstanceID][]cloud.VolumeID, len(r.GetQuery()))
	for inst, vols := range r.GetQuery() {
		ids := make([]cloud.VolumeID, len(vols.GetVolumeIds()))
		for i, v := range vols.GetVolumeIds() {
			ids[i] = cloud.VolumeID(v)
		}
		query[cloud.InstanceID(inst)] = ids
	}
	ans, err := s.p.VolumesAreAttached(ctx, query)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &messages.VolumesAreAttachedResponse{Instances: make(map[string]*messages.AttachedFlags, len(ans))}
	for inst, flags := range ans {
		m := make(map[string]bool, len(flags))
		for v, ok := range flags {
			m[string(v)] = ok
		}
		out.Instances[string(inst)] = &messages.AttachedFlags{Attached: m}
	}
	return out, nil
}

func (s *service) InstanceVolumes(ctx context.Context, r *messages.InstanceVolumesRequest) (*messages.InstanceVolumesResponse, error) {
	insts := make([]cloud.InstanceID, len(r.GetInstanceIds()))
	for i, id := range r.GetInstanceIds() {
		insts[i] = cloud.InstanceID(id)
	}
	ans, err := s.p.InstanceVolumes(ctx, insts)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &messages.InstanceVolumesResponse{Instances: make(map[string]*messages.DevicePaths, len(ans))}
	for inst, devs := range ans {
		m := make(map[string]string, len(devs))
		for v, dev := range devs {
			m[string(v)] = dev
		}
		out.Instances[string(inst)] = &messages.DevicePaths{Devices: m}
	}
	return out, nil
}

// InstanceIDs serves cloud.InstanceResolver; a provider without it
// answers Unimplemented, and the client resolves node by node.
func (s *service) InstanceIDs(ctx context.Context, r *messages.InstanceIDsRequest) (*messages.InstanceIDsResponse, error) {
	res, ok := s.p.(cloud.InstanceResolver)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the provider resolves node by node")
	}
	nodes := make([]cloud.NodeName, len(r.GetNodes()))
	for i, n := range r.GetNodes() {
		nodes[i] = cloud.NodeName(n)
	}
	ans, err := res.InstanceIDs(ctx, nodes)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &messages.InstanceIDsResponse{Instances: make(map[string]string, len(ans))}
	for n, id := range ans {
		out.Instances[string(n)] = string(id)
	}
	return out, nil
}

func (s *service) BatchSize(context.Context, *messages.BatchSizeRequest) (*messages.BatchSizeResponse, error) {
	return &messages.BatchSizeResponse{BatchSize: int32(min(s.p.BatchSize(), math.MaxInt32))}, nil
}
