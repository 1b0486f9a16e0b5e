package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/sim"
)

// CloudConfig configures tether cloud serve: one durable sim cloud that
// every process of a distributed tether shares over gRPC
// (cloud/remote.ServeSim: the cloud.Provider, and the sim's admin side
// that API servers, node agents and checkers use, on one address).
type CloudConfig struct {
	// DataDir holds the cloud's state (cloud-state.json and its log) and
	// its volumes' content (cloud/), under the directory's lock.
	DataDir string
	// Addr is the listen address: loopback unless AllowRemote.
	Addr        string
	AllowRemote bool
	// Sim configures the cloud (latency, throttle, permissive, the attach
	// limit of new instances); its StatePath and ContentDir come from
	// DataDir. Sim.AttachLimit applies to the instances created while it
	// serves: an instance of the state already keeps the limit it was
	// created with (cloud-state.json records each instance's).
	Sim sim.Config
	// TLS, if set, serves over TLS; with ClientCA, every client must
	// present a certificate signed by it (mutual TLS). Beyond loopback
	// mutual TLS is required: the service has no other authentication.
	TLS TLSFiles
}

// ErrCloudExposed: tether cloud serve beyond loopback without mutual TLS.
var ErrCloudExposed = errors.New("bootstrap: cloud service beyond loopback without mutual TLS")

// cloudServerOptions checks cfg's exposure and loads its TLS.
func cloudServerOptions(cfg CloudConfig) ([]grpc.ServerOption, error) {
	t := cfg.TLS
	if (t.Cert == "") != (t.Key == "") || (t.ClientCA != "" && t.Cert == "") {
		return nil, fmt.Errorf("%w: --tls-cert and --tls-key go together, and --tls-client-ca needs them", ErrTLSFiles)
	}
	if !Loopback(cfg.Addr) {
		if !cfg.AllowRemote {
			return nil, fmt.Errorf("%w: refusing to listen on %q (give --allow-remote to serve beyond this machine)", ErrNotLoopback, cfg.Addr)
		}
		if t.ClientCA == "" {
			return nil, fmt.Errorf("%w: %q needs --tls-cert, --tls-key and --tls-client-ca (tether certs makes them)", ErrCloudExposed, cfg.Addr)
		}
	}
	if t.Cert == "" {
		return nil, nil
	}
	tc, err := certs.ServerConfig(t.Cert, t.Key, t.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("cloud serve TLS: %w", err)
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(tc))}, nil
}

// ServeCloud serves the durable sim cloud of cfg.DataDir on cfg.Addr until
// ctx is done, then stops serving (calls in flight end first) and closes
// the cloud's state. ready, if set, is called with the address it listens
// on once it serves.
func ServeCloud(ctx context.Context, cfg CloudConfig, out io.Writer, ready func(addr string)) error {
	if cfg.DataDir == "" {
		return errors.New("cloud serve: a data directory is required")
	}
	opts, err := cloudServerOptions(cfg) // before anything is touched
	if err != nil {
		return err
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	sc := cfg.Sim
	sc.ContentDir = filepath.Join(cfg.DataDir, "cloud")
	sc.StatePath = filepath.Join(cfg.DataDir, "cloud-state.json")
	if err := os.MkdirAll(sc.ContentDir, 0o700); err != nil {
		return errors.Join(fmt.Errorf("cloud serve: %w", err), lock.release())
	}
	cl, err := sim.Open(sc)
	if err != nil {
		return errors.Join(fmt.Errorf("cloud serve: %w", err), lock.release())
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("cloud serve: %w", err), cl.Close(), lock.release())
	}
	srv := remote.ServeSim(lis, cl, opts...)
	limit := sc.AttachLimit
	if limit <= 0 {
		limit = sim.DefaultAttachLimit
	}
	fmt.Fprintf(out, "tether cloud serving on %s (state in %s; attach limit of new instances %d)\n", lis.Addr(), cfg.DataDir, limit)
	if ready != nil {
		ready(lis.Addr().String())
	}
	<-ctx.Done()
	srv.Stop()
	return errors.Join(cl.Close(), lock.release())
}
