package process

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/messages"
)

func upConfig(dir string) UpConfig {
	cfg := UpConfig{Embedded: DefaultConfig(), APIAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"}
	cfg.Embedded.DataDir, cfg.Embedded.Nodes = dir, 1
	cfg.Embedded.LogOutput, cfg.Embedded.LogLevel = io.Discard, "warn"
	return cfg
}

func TestCheckExposure(t *testing.T) {
	pair := TLSFiles{Cert: "s.pem", Key: "s-key.pem"}
	for _, tt := range []struct {
		name    string
		change  func(*UpConfig)
		want    error
		mention string
	}{
		{"loopback, plain", func(*UpConfig) {}, nil, ""},
		{"loopback, TLS", func(c *UpConfig) { c.TLS = pair }, nil, ""},
		{"localhost and ::1", func(c *UpConfig) { c.APIAddr, c.MetricsAddr = "localhost:7070", "[::1]:7071" }, nil, ""},
		// The bug: --allow-remote served the bearer token in plain text.
		{"remote API without TLS", func(c *UpConfig) { c.AllowRemote, c.APIAddr = true, "0.0.0.0:7070" }, ErrPlainRemote, "--tls-cert FILE and --tls-key FILE"},
		{"remote API on all interfaces without TLS", func(c *UpConfig) { c.AllowRemote, c.APIAddr = true, ":7070" }, ErrPlainRemote, "--tls-cert"},
		{"remote API with TLS", func(c *UpConfig) { c.AllowRemote, c.APIAddr, c.TLS = true, "0.0.0.0:7070", pair }, nil, ""},
		{"remote API without --allow-remote", func(c *UpConfig) { c.APIAddr, c.TLS = "0.0.0.0:7070", pair }, ErrNotLoopback, "--allow-remote"},
		{"remote metrics without TLS", func(c *UpConfig) { c.AllowRemote, c.MetricsAddr = true, "0.0.0.0:7071" }, ErrPlainMetrics, "--insecure-metrics"},
		{"remote metrics, insecure", func(c *UpConfig) { c.AllowRemote, c.MetricsAddr, c.InsecureMetrics = true, "0.0.0.0:7071", true }, nil, ""},
		{"remote metrics with the API's pair", func(c *UpConfig) { c.AllowRemote, c.MetricsAddr, c.TLS = true, "0.0.0.0:7071", pair }, nil, ""},
		{"remote metrics with their own pair", func(c *UpConfig) { c.AllowRemote, c.MetricsAddr, c.MetricsTLS = true, "0.0.0.0:7071", pair }, nil, ""},
		{"remote metrics without --allow-remote", func(c *UpConfig) { c.MetricsAddr, c.InsecureMetrics = "0.0.0.0:7071", true }, ErrNotLoopback, "--metrics-addr"},
		{"cert without key", func(c *UpConfig) { c.TLS.Cert = "s.pem" }, ErrTLSFiles, "--tls-key"},
		{"client CA without cert", func(c *UpConfig) { c.TLS.ClientCA = "ca.pem" }, ErrTLSFiles, "--tls-client-ca"},
		{"metrics key without cert", func(c *UpConfig) { c.MetricsTLS.Key = "k.pem" }, ErrTLSFiles, "--metrics-tls-cert"},
		{"insecure and TLS metrics", func(c *UpConfig) { c.MetricsTLS, c.InsecureMetrics = pair, true }, ErrTLSFiles, "contradict"},
	} {
		cfg := upConfig("unused")
		tt.change(&cfg)
		err := CheckExposure(cfg)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) || !strings.Contains(errString(err), tt.mention) {
			t.Errorf("%s: %v, want %v mentioning %q", tt.name, err, tt.want, tt.mention)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Up refuses before it starts anything: no data directory, no listener.
func TestUpRefusesPlainTextBeyondLoopback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := upConfig(dir)
	cfg.AllowRemote, cfg.APIAddr = true, "0.0.0.0:0"
	if err := Up(context.Background(), cfg, io.Discard); !errors.Is(err, ErrPlainRemote) {
		t.Fatalf("Up: %v, want ErrPlainRemote", err)
	}
	cfg = upConfig(dir)
	cfg.AllowRemote, cfg.MetricsAddr = true, "0.0.0.0:0"
	if err := Up(context.Background(), cfg, io.Discard); !errors.Is(err, ErrPlainMetrics) {
		t.Fatalf("Up: %v, want ErrPlainMetrics", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused Up touched its data directory: %v", err)
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7070": "127.0.0.1:7070",
		"0.0.0.0:7070":   "127.0.0.1:7070",
		"[::]:7070":      "[::1]:7070",
		"10.0.0.5:7070":  "10.0.0.5:7070",
	} {
		if got := dialAddr(in); got != want {
			t.Errorf("dialAddr(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]struct {
		addr string
		tls  bool
	}{
		"127.0.0.1:7070\n":       {"127.0.0.1:7070", false},
		"tls://127.0.0.1:7070\n": {"127.0.0.1:7070", true},
	} {
		if a, tls := ParseAPIAddr(in); a != want.addr || tls != want.tls {
			t.Errorf("ParseAPIAddr(%q) = %s, %v", in, a, tls)
		}
	}
}

// lineWaiter is an io.Writer that closes seen once a written line
// contains want.
type lineWaiter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *lineWaiter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runUp runs Up until the test ends and returns once it is up.
func runUp(t *testing.T, cfg UpConfig) *lineWaiter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWaiter{want: "  try ", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- Up(ctx, cfg, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Up: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Up did not return within 30s of its context's end")
		}
	})
	select {
	case <-out.seen:
	case err := <-done:
		t.Fatalf("Up returned before it was up: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("Up not up within 30s:\n%s", out.String())
	}
	return out
}

// With TLS, Up tells clients on the machine a tls:// address and the
// certificate to trust; a client with them (and the client certificate
// mutual TLS asks for) gets through, a plain-text one does not.
func TestUpServesTLS(t *testing.T) {
	dir, certDir := t.TempDir(), t.TempDir()
	if _, err := certs.WriteSet(certDir, certs.SetOptions{Hosts: []string{"localhost"}, ValidFor: time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p := func(n string) string { return filepath.Join(certDir, n) }
	cfg := upConfig(dir)
	cfg.TLS = TLSFiles{Cert: p(certs.ServerFile), Key: p(certs.ServerKeyFile), ClientCA: p(certs.CAFile)}
	cfg.MetricsTLS = TLSFiles{Cert: p(certs.ServerFile), Key: p(certs.ServerKeyFile)}
	out := runUp(t, cfg)
	if !strings.Contains(out.String(), "gRPC over mutual TLS") || !strings.Contains(out.String(), "https://") {
		t.Errorf("tether up says:\n%s", out.String())
	}

	b, err := os.ReadFile(filepath.Join(dir, AddrFile))
	if err != nil {
		t.Fatal(err)
	}
	addr, useTLS := ParseAPIAddr(string(b))
	if !useTLS {
		t.Fatalf("%s = %q, want a tls:// address", AddrFile, b)
	}
	token, err := os.ReadFile(filepath.Join(dir, api.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	_, pinned, err := certs.LoadPool(filepath.Join(dir, APICertFile))
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(addr)
	name := certs.ServerName(host, pinned) // the certificate names localhost, not 127.0.0.1
	get := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.TrimSpace(string(token)))
		_, err = messages.NewTetherClient(conn).Get(ctx, &messages.GetRequest{Kind: "nodes"})
		return err
	}
	tlsCreds := func(cert, key string) credentials.TransportCredentials {
		c, err := certs.ClientConfig(filepath.Join(dir, APICertFile), cert, key, name)
		if err != nil {
			t.Fatal(err)
		}
		return credentials.NewTLS(c)
	}
	if err := get(insecure.NewCredentials()); status.Code(err) != codes.Unavailable {
		t.Errorf("plain-text client: %v, want Unavailable", err)
	}
	if err := get(tlsCreds("", "")); status.Code(err) != codes.Unavailable {
		t.Errorf("client without a client certificate: %v, want Unavailable", err)
	}
	if err := get(tlsCreds(p(certs.ClientFile), p(certs.ClientKeyFile))); err != nil {
		t.Errorf("client with the pinned certificate and a client certificate: %v", err)
	}

	ca, _, _ := certs.LoadPool(p(certs.CAFile))
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: ca, ServerName: "localhost"}}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(strings.Fields(out.String()[strings.Index(out.String(), "metrics "):])[1])
	if err != nil {
		t.Fatalf("GET metrics over TLS: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET metrics over TLS: %s", res.Status)
	}
}

func TestInsecureMetricsWarns(t *testing.T) {
	cfg := upConfig(t.TempDir())
	cfg.InsecureMetrics = true
	var log strings.Builder
	l := logrus.New()
	l.SetOutput(&log)
	x, err := loadExposure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := x.serveMetrics(cfg.MetricsAddr, false, nil, nil, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if !strings.Contains(log.String(), "plain text") || !strings.Contains(log.String(), "level=warning") {
		t.Fatalf("log: %q, want a warning about plain text", log.String())
	}
}
