package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/sim"
)

// CloudConfig configures tether cloud serve: one durable sim cloud that
// every process of a distributed tether shares over gRPC (cloud/remote).
type CloudConfig struct {
	// DataDir holds the cloud's state (cloud-state.json and its log) and
	// its volumes' content (cloud/), under the directory's lock.
	DataDir string
	// Addr is the listen address: loopback unless AllowRemote.
	Addr        string
	AllowRemote bool
	// Sim configures the cloud (latency, throttle, permissive); its
	// StatePath and ContentDir come from DataDir.
	Sim sim.Config
}

// ServeCloud serves the durable sim cloud of cfg.DataDir on cfg.Addr until
// ctx is done, then stops serving (calls in flight end first) and closes
// the cloud's state. ready, if set, is called with the address it listens
// on once it serves.
func ServeCloud(ctx context.Context, cfg CloudConfig, out io.Writer, ready func(addr string)) error {
	if cfg.DataDir == "" {
		return errors.New("cloud serve: a data directory is required")
	}
	if !cfg.AllowRemote && !Loopback(cfg.Addr) {
		return fmt.Errorf("cloud serve: refusing to listen on %q: not a loopback address (give --allow-remote to serve beyond this machine)", cfg.Addr)
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
	srv := remote.Serve(lis, cl)
	fmt.Fprintf(out, "tether cloud serving on %s (state in %s)\n", lis.Addr(), cfg.DataDir)
	if ready != nil {
		ready(lis.Addr().String())
	}
	<-ctx.Done()
	srv.Stop()
	return errors.Join(cl.Close(), lock.release())
}
