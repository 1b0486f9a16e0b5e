package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// MaxRequestBytes bounds one request, and one message of a stream.
const MaxRequestBytes = 1 << 20

// Server is a running API server.
type Server struct {
	grpc    *grpc.Server
	lis     net.Listener
	done    chan error
	stop    sync.Once
	stopErr error
}

// Serve listens on addr (a loopback address) and serves in plain text in a
// goroutine. allowRemote is kept for its callers: beyond loopback the API
// needs TLS (ServeTLS) as well.
func Serve(addr, token string, ctl *controller.Controller, nodes cloud.Provisioner, allowRemote bool) (*Server, error) {
	return ServeTLS(addr, token, ctl, nodes, allowRemote, nil)
}

func serve(addr, token string, svc *service, allowRemote bool, opts ...grpc.ServerOption) (*Server, error) {
	if !allowRemote {
		if err := checkLoopback(addr); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api: listen %s: %w", addr, err)
	}
	g := grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.UnaryInterceptor(authenticate(token)), grpc.StreamInterceptor(authenticateStream(token)))...)
	messages.RegisterTetherServer(g, svc)
	s := &Server{grpc: g, lis: lis, done: make(chan error, 1)}
	go func() { s.done <- g.Serve(lis) }()
	return s, nil
}

// Addr is where the server listens ("127.0.0.1:PORT").
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Stop finishes the calls in flight and stops. It may be called again:
// it returns what the first call returned.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		s.grpc.GracefulStop()
		if err := <-s.done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.stopErr = err
		}
	})
	return s.stopErr
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("api: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("api: refusing to listen on %q: not a loopback address", addr)
}

// authenticate checks "authorization: Bearer <token>" on every unary
// call, in constant time.
func authenticate(token string) grpc.UnaryServerInterceptor {
	want := []byte("Bearer " + token)
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := authorized(ctx, want); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// authenticateStream is authenticate for streams: the token is checked
// before the handler reads the stream's first message.
func authenticateStream(token string) grpc.StreamServerInterceptor {
	want := []byte("Bearer " + token)
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := authorized(ss.Context(), want); err != nil {
			return err
		}
		return h(srv, ss)
	}
}

// authorized returns an Unauthenticated status unless ctx's metadata holds
// exactly one authorization, want.
func authorized(ctx context.Context, want []byte) error {
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get("authorization")
	if len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), want) != 1 {
		return status.Error(codes.Unauthenticated, "missing or wrong API token (see the api-token file in the data directory)")
	}
	return nil
}

// toStatus maps controller errors to gRPC codes.
func toStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, controller.ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, errNotFound):
		return status.Error(codes.NotFound, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

var errNotFound = errors.New("not found")

// kindOf normalizes "volumes", "Volume", "vol" to "volume".
func kindOf(s string) (string, error) {
	switch strings.ToLower(s) {
	case "volume", "volumes", "vol", "vols":
		return "volume", nil
	case "node", "nodes":
		return "node", nil
	case "workload", "workloads", "wl":
		return "workload", nil
	}
	return "", fmt.Errorf("%w: unknown kind %q (want volume, node or workload)", controller.ErrInvalid, s)
}
