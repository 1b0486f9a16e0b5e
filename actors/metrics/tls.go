package metrics

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
)

// ServeTLS is ServeExposed over TLS: it listens on addr whatever its host
// and speaks only TLS with cfg (client certificates as cfg says), so that
// metrics can be scraped from another machine without being readable on
// the way.
func ServeTLS(addr string, m *Metrics, ready func() error, cfg *tls.Config) (*Server, error) {
	if cfg == nil || (len(cfg.Certificates) == 0 && cfg.GetCertificate == nil) {
		return nil, errors.New("metrics: TLS configuration without a certificate")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen: %w", err)
	}
	return start(tls.NewListener(ln, cfg.Clone()), m, ready, true), nil
}
