package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/api"
)

// AddrFile, under the data directory, tells clients where the API listens.
const AddrFile = "api-addr"

// UpConfig configures tether up: the embedded system made durable, served
// over the API and observed through the metrics endpoint.
type UpConfig struct {
	Embedded    Config
	APIAddr     string
	MetricsAddr string
	// AllowRemote lets the API and metrics listen on non-loopback
	// addresses (the token still guards the API), the API over TLS only.
	AllowRemote bool
	// TLS, if set, serves the API over TLS (needed beyond loopback), and
	// metrics beyond loopback unless MetricsTLS or InsecureMetrics say
	// otherwise. See CheckExposure.
	TLS        TLSFiles
	MetricsTLS TLSFiles
	// InsecureMetrics serves metrics in plain text even beyond loopback
	// (with a warning in the log).
	InsecureMetrics bool
}

// Up runs tether until ctx is done, then shuts down gracefully: the API
// stops taking calls, the agents and the controller stop, the store is
// flushed and closed. Mounts stay: workloads keep running.
func Up(ctx context.Context, cfg UpConfig, out io.Writer) error {
	x, err := loadExposure(cfg) // before anything starts or listens
	if err != nil {
		return err
	}
	ec := cfg.Embedded
	ec.Durable = true
	m, err := metrics.New()
	if err != nil {
		return err
	}
	m.SetGlobal()
	ec.Metrics = m
	// StartEmbedded takes the data directory's lock before it reads or
	// writes anything there; the token comes after.
	e, err := StartEmbedded(ec)
	if err != nil {
		return err
	}
	if err := m.StoreRequests(func() map[string]uint64 { return store.RequestCounts(e.Store) }); err != nil {
		return errors.Join(err, e.Stop())
	}
	token, err := api.LoadOrCreateToken(ec.DataDir)
	if err != nil {
		return errors.Join(err, e.Stop())
	}
	var state atomic.Value // why not ready; "" when ready
	state.Store("starting")
	ready := func() error {
		if why := state.Load().(string); why != "" {
			return errors.New(why)
		}
		return nil
	}
	srv, err := api.ServeTLS(cfg.APIAddr, token, e.Controller, e.Account, cfg.AllowRemote, x.api)
	if err != nil {
		return errors.Join(err, e.Stop())
	}
	msrv, err := x.serveMetrics(cfg.MetricsAddr, cfg.AllowRemote, m, ready, e.Log)
	if err != nil {
		return errors.Join(err, srv.Stop(), e.Stop())
	}
	page, pageURL, err := ServeUI(msrv, token, e, m)
	if err != nil {
		return errors.Join(err, srv.Stop(), msrv.Close(context.Background()), e.Stop())
	}
	addrFile := filepath.Join(ec.DataDir, AddrFile)
	if err := writeClientFiles(ec.DataDir, srv.Addr(), x); err != nil {
		page.Close()
		return errors.Join(err, srv.Stop(), msrv.Close(context.Background()), e.Stop())
	}
	state.Store("")
	fmt.Fprintf(out, "tether is up: %d nodes (%v), data in %s\n", len(e.NodeNames), e.NodeNames, ec.DataDir)
	fmt.Fprintf(out, "  API      %s (%s; bearer token in %s)\n", srv.Addr(), x.apiProtocol(), filepath.Join(ec.DataDir, api.TokenFile))
	fmt.Fprintf(out, "  metrics  %s://%s/metrics  (and /healthz, /readyz)\n", x.metricsScheme(), msrv.Addr())
	fmt.Fprintf(out, "  UI       %s\n", pageURL)
	if e.kind == CloudLoop {
		fmt.Fprintf(out, "  cloud    loop: disks are image files in %s, attached as loop devices\n", filepath.Join(ec.DataDir, LoopDir, "images"))
	}
	if a, ok := e.Account.(*csiAccount); ok {
		fmt.Fprintf(out, "  cloud    %s\n", a.describe())
	}
	fmt.Fprintf(out, "  try      tether get nodes --data-dir %s\n", ec.DataDir)
	<-ctx.Done()
	fmt.Fprintln(out, "tether: shutting down")
	state.Store("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page.Close() // before the controller it reads stops
	return errors.Join(os.Remove(addrFile), srv.Stop(), msrv.Close(sctx), e.Stop(), m.Shutdown(sctx))
}
