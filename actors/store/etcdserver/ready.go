package etcdserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// pollEvery is how often waitReady asks.
const pollEvery = 50 * time.Millisecond

// waitReady polls etcd's health endpoint at client until it reports
// healthy (a leader elected and a read served), p exits, or timeout
// passes.
func waitReady(probe *http.Client, client string, p *process, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last := "no answer yet"
	for {
		err := healthy(ctx, probe, client)
		if err == nil {
			return nil
		}
		last = err.Error()
		select {
		case <-p.done:
			return fmt.Errorf("etcd exited before it answered (%v)", p.err)
		case <-ctx.Done():
			return fmt.Errorf("etcd did not answer within %v (last: %s)", timeout, last)
		case <-tick.C:
		}
	}
}

// probe asks without keeping connections: none outlives a check (tests
// that look for leaked goroutines), and none holds on to a killed etcd.
var probe = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// healthy asks client's /health once.
func healthy(ctx context.Context, probe *http.Client, client string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := probe.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Health != "true" {
		return fmt.Errorf("health %s: %s", resp.Status, body)
	}
	return nil
}

// clientTLS is the TLS of a client of an etcd served with t: t's CA for
// etcd's certificate, t's certificate as the client's.
func clientTLS(t TLSFiles) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("etcdserver: TLS certificate: %w", err)
	}
	pem, err := os.ReadFile(t.CA)
	if err != nil {
		return nil, fmt.Errorf("etcdserver: TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("etcdserver: TLS CA %s holds no certificate", t.CA)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
