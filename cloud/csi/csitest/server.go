package csitest

// Serving an Observed driver: on a socket that can stop serving and
// serve again, as a driver's plugin restarts with its state kept (a
// durable backend).

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// Listen serves o as Driver.Listen does, observed: on a new unix socket
// at socket, its Identity and Controller services, and the Node service
// of node ID nodeID unless it is "". stop stops the server, cancels the
// calls in progress and waits for their handlers (and hooks) to return:
// after it, no call of this server changes anything. The socket file is
// removed.
func (o *Observed) Listen(socket, nodeID string) (stop func(), err error) {
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(o.intercept(nodeID)), grpc.WaitForHandlers(true))
	spec.RegisterIdentityServer(srv, identity{d: o.Driver})
	spec.RegisterControllerServer(srv, controller{d: o.Driver})
	if nodeID != "" {
		spec.RegisterNodeServer(srv, node{d: o.Driver, id: nodeID})
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis) // returns once stopped
	}()
	stop = func() {
		srv.Stop()
		<-served
	}
	if err := awaitServing(socket); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// Serve serves o as Driver.Serve does, observed, on a new socket in a
// new temporary directory; server, socket and directory go in
// t.Cleanup.
func (o *Observed) Serve(t testing.TB, nodeID string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // a socket path is limited to about 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := o.NewServer(filepath.Join(dir, "csi.sock"), nodeID)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.Socket()
}

// Server is an Observed driver served on one socket (the node plugin of
// one node ID, or the controller plugin), which may stop and serve
// again: a plugin restart, the driver's state kept. Its methods are safe
// for concurrent use.
type Server struct {
	o              *Observed
	socket, nodeID string
	mu             sync.Mutex
	stop           func() // nil: not serving
}

// NewServer returns a Server of o at socket for node ID nodeID (""
// serves no Node service), not serving yet.
func (o *Observed) NewServer(socket, nodeID string) *Server {
	return &Server{o: o, socket: socket, nodeID: nodeID}
}

// Socket is the server's socket path.
func (s *Server) Socket() string { return s.socket }

// Start serves, unless it serves already. A socket file left where it
// listens (a plugin that crashed) is removed first; any other file is
// an error.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return nil
	}
	if err := removeStaleSocket(s.socket); err != nil {
		return err
	}
	stop, err := s.o.Listen(s.socket, s.nodeID)
	if err != nil {
		return err
	}
	s.stop = stop
	return nil
}

// Stop stops serving (see Listen's stop), unless it is not serving.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// Serving reports whether the server serves.
func (s *Server) Serving() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop != nil
}

// removeStaleSocket removes the socket file at path, if any.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("csitest: %s exists and is no socket", path)
	}
	return os.Remove(path)
}
