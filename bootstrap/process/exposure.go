package process

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/cloud/files/durable"
)

// Files under the data directory that tell clients on this machine how to
// reach the API: AddrFile holds the address, prefixed with TLSScheme when
// the API speaks TLS; APICertFile then holds the API's own certificate,
// which those clients trust (pin) unless given a CA.
const (
	TLSScheme   = "tls://"
	APICertFile = "api-cert.pem"
)

// TLSFiles names the PEM files a TLS server is made of.
type TLSFiles struct {
	Cert, Key string
	// ClientCA, if set, requires every client to present a certificate
	// signed by a CA in it (mutual TLS).
	ClientCA string
}

// Refusals of CheckExposure, each wrapped with the flags to add or drop.
var (
	ErrPlainRemote  = errors.New("bootstrap: API beyond loopback without TLS")
	ErrPlainMetrics = errors.New("bootstrap: metrics beyond loopback without TLS")
	ErrNotLoopback  = errors.New("bootstrap: address beyond loopback without --allow-remote")
	ErrTLSFiles     = errors.New("bootstrap: incomplete TLS flags")
)

// CheckExposure decides, without reading a file or listening, whether cfg
// may serve as asked: beyond loopback the API needs --allow-remote and TLS
// (its bearer token must never cross a network in plain text), and metrics
// need --allow-remote and TLS or an explicit --insecure-metrics.
func CheckExposure(cfg UpConfig) error {
	t, mt := cfg.TLS, cfg.MetricsTLS
	switch {
	case (t.Cert == "") != (t.Key == ""):
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrTLSFiles)
	case t.ClientCA != "" && t.Cert == "":
		return fmt.Errorf("%w: --tls-client-ca needs --tls-cert and --tls-key", ErrTLSFiles)
	case (mt.Cert == "") != (mt.Key == ""):
		return fmt.Errorf("%w: --metrics-tls-cert and --metrics-tls-key go together", ErrTLSFiles)
	case mt.Cert != "" && cfg.InsecureMetrics:
		return fmt.Errorf("%w: --insecure-metrics and --metrics-tls-cert contradict each other: drop one", ErrTLSFiles)
	}
	for _, a := range []struct{ flag, addr string }{{"--api-addr", cfg.APIAddr}, {"--metrics-addr", cfg.MetricsAddr}} {
		if !Loopback(a.addr) && !cfg.AllowRemote {
			return fmt.Errorf("%w: %s %s: listen on 127.0.0.1, ::1 or localhost, or add --allow-remote (with --tls-cert and --tls-key)", ErrNotLoopback, a.flag, a.addr)
		}
	}
	if !Loopback(cfg.APIAddr) && t.Cert == "" {
		return fmt.Errorf("%w: --api-addr %s with --allow-remote: add --tls-cert FILE and --tls-key FILE (tether certs --out DIR makes a pair), or listen on loopback", ErrPlainRemote, cfg.APIAddr)
	}
	if !Loopback(cfg.MetricsAddr) && metricsFiles(cfg).Cert == "" && !cfg.InsecureMetrics {
		return fmt.Errorf("%w: --metrics-addr %s: add --tls-cert and --tls-key (or --metrics-tls-cert and --metrics-tls-key), or --insecure-metrics to serve them in plain text", ErrPlainMetrics, cfg.MetricsAddr)
	}
	return nil
}

// metricsFiles is what metrics are served with: their own pair if given,
// else the API's pair beyond loopback; plain text on loopback otherwise
// (as before TLS), and always with --insecure-metrics.
func metricsFiles(cfg UpConfig) TLSFiles {
	switch {
	case cfg.InsecureMetrics:
		return TLSFiles{}
	case cfg.MetricsTLS.Cert != "":
		return TLSFiles{Cert: cfg.MetricsTLS.Cert, Key: cfg.MetricsTLS.Key}
	case !Loopback(cfg.MetricsAddr):
		return TLSFiles{Cert: cfg.TLS.Cert, Key: cfg.TLS.Key}
	}
	return TLSFiles{}
}

// Loopback reports whether addr's host names a loopback interface
// (localhost or a loopback address), without asking a resolver (the
// servers check what they actually bind).
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// exposure is how Up serves, settled before anything starts.
type exposure struct {
	api, metrics    *tls.Config // nil: plain text
	insecureMetrics bool
}

// loadExposure checks cfg and loads its certificates.
func loadExposure(cfg UpConfig) (exposure, error) {
	if err := CheckExposure(cfg); err != nil {
		return exposure{}, err
	}
	x := exposure{insecureMetrics: cfg.InsecureMetrics}
	var err error
	if cfg.TLS.Cert != "" {
		if x.api, err = certs.ServerConfig(cfg.TLS.Cert, cfg.TLS.Key, cfg.TLS.ClientCA); err != nil {
			return exposure{}, fmt.Errorf("API TLS: %w", err)
		}
	}
	if mf := metricsFiles(cfg); mf.Cert != "" {
		if x.metrics, err = certs.ServerConfig(mf.Cert, mf.Key, ""); err != nil {
			return exposure{}, fmt.Errorf("metrics TLS: %w", err)
		}
	}
	return x, nil
}

func (x exposure) serveMetrics(addr string, allowRemote bool, m *metrics.Metrics, ready func() error, log *logrus.Logger) (*metrics.Server, error) {
	if x.metrics != nil {
		return metrics.ServeTLS(addr, m, ready, x.metrics)
	}
	serve := metrics.Serve
	if allowRemote {
		serve = metrics.ServeExposed
	}
	s, err := serve(addr, m, ready)
	if err == nil && x.insecureMetrics {
		log.Warnf("metrics are served in plain text on %s (--insecure-metrics): whoever can reach that address can read them", s.Addr())
	}
	return s, err
}

func (x exposure) apiProtocol() string {
	if x.api == nil {
		return "gRPC"
	}
	if x.api.ClientAuth == tls.RequireAndVerifyClientCert {
		return "gRPC over mutual TLS"
	}
	return "gRPC over TLS"
}

func (x exposure) metricsScheme() string {
	if x.metrics == nil {
		return "http"
	}
	return "https"
}

// writeClientFiles tells clients on this machine where the API listens
// and, with TLS, which certificate to trust: APICertFile first, so that a
// client that reads a tls:// address finds it.
func writeClientFiles(dataDir, listenAddr string, x exposure) error {
	line := dialAddr(listenAddr)
	certPath := filepath.Join(dataDir, APICertFile)
	if x.api == nil {
		if err := os.Remove(certPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else {
		leaf := x.api.Certificates[0].Certificate[0]
		if err := durable.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf}), 0o644); err != nil {
			return err
		}
		line = TLSScheme + line
	}
	return durable.WriteFile(filepath.Join(dataDir, AddrFile), []byte(line+"\n"), 0o600)
}

// dialAddr turns a wildcard listen address (0.0.0.0:7070, [::]:7070) into
// the loopback address a client on this machine dials.
func dialAddr(listenAddr string) string {
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return listenAddr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil || !ip.IsUnspecified():
		return listenAddr
	case ip.To4() != nil:
		return net.JoinHostPort("127.0.0.1", port)
	}
	return net.JoinHostPort("::1", port)
}

// ParseAPIAddr splits an address as AddrFile (or --addr) holds it into the
// address to dial and whether the API there speaks TLS.
func ParseAPIAddr(s string) (addr string, useTLS bool) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, TLSScheme); ok {
		return rest, true
	}
	return s, false
}
