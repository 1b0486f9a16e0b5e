package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// newClient returns a client that keeps no idle connections, so no client
// goroutine outlives a request.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func closeServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestServeEndpoints(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	m.CloudCall("attach", "ok", time.Second)
	otelCounter, err := m.MeterProvider().Meter("test").Int64Counter("tether_test_otel_counter")
	if err != nil {
		t.Fatal(err)
	}
	otelCounter.Add(context.Background(), 3)

	var notReady atomic.Pointer[error]
	starting := errors.New("controller: not started")
	notReady.Store(&starting)
	ready := func() error {
		if p := notReady.Load(); p != nil {
			return *p
		}
		return nil
	}

	s, err := Serve("127.0.0.1:0", m, ready)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	defer closeServer(t, s)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || strings.HasSuffix(s.Addr(), ":0") {
		t.Fatalf("Addr = %q, want 127.0.0.1 and a real port", s.Addr())
	}
	c := newClient(t)
	base := "http://" + s.Addr()

	code, body := get(t, c, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, want := range []string{
		`tether_cloud_calls_total{method="attach",result="ok"} 1`,
		"go_goroutines ",                  // Go runtime collector
		"process_",                        // process collector
		"tether_test_otel_counter_total{", // OpenTelemetry exporter
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if code, body := get(t, c, base+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, c, base+"/readyz"); code != http.StatusServiceUnavailable || body != starting.Error() {
		t.Errorf("/readyz before ready = %d %q, want 503 %q", code, body, starting)
	}
	notReady.Store(nil)
	if code, body := get(t, c, base+"/readyz"); code != http.StatusOK || body != "ready" {
		t.Errorf("/readyz when ready = %d %q, want 200 ready", code, body)
	}
	if code, _ := get(t, c, base+"/nope"); code != http.StatusNotFound {
		t.Errorf("/nope = %d, want 404", code)
	}
}

func TestServeNilMetricsAndReady(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	s, err := Serve("127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	defer closeServer(t, s)
	c := newClient(t)
	if code, body := get(t, c, "http://"+s.Addr()+"/readyz"); code != http.StatusOK || body != "ready" {
		t.Errorf("/readyz with nil ready = %d %q, want 200 ready", code, body)
	}
	if code, _ := get(t, c, "http://"+s.Addr()+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics with nil metrics = %d, want 404", code)
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		s, err := Serve(addr, nil, nil)
		if !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Serve(%q) = %v, want ErrNotLoopback", addr, err)
		}
		if s != nil {
			t.Errorf("Serve(%q) returned a server", addr)
		}
	}
	if _, err := Serve("no-port", nil, nil); err == nil {
		t.Errorf("Serve without a port succeeded")
	}
}

func TestLoopbackHost(t *testing.T) {
	tests := map[string]bool{
		"127.0.0.1":   true,
		"127.1.2.3":   true,
		"::1":         true,
		"localhost":   true,
		"":            false,
		"0.0.0.0":     false,
		"::":          false,
		"10.0.0.1":    false,
		"example.com": false,
		"localhost.":  false,
	}
	for host, want := range tests {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// A request stuck in a handler does not keep Close waiting past its context,
// and Close still returns only after the serving goroutine has exited.
func TestCloseCutsOffStuckRequest(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	entered := make(chan struct{})
	release := make(chan struct{})
	ready := func() error {
		close(entered)
		<-release
		return nil
	}
	s, err := Serve("127.0.0.1:0", nil, ready)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	c := newClient(t)
	got := make(chan error, 1)
	go func() {
		resp, err := c.Get("http://" + s.Addr() + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a stuck request = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-got; err == nil {
		t.Errorf("the cut-off request succeeded")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
