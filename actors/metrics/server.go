package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNotLoopback is returned by Serve for an address whose host is not
// loopback.
var ErrNotLoopback = errors.New("metrics: refusing to listen on a non-loopback address")

// Server serves /metrics, /healthz and /readyz on one listener.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	mux  *http.ServeMux
	tls  bool          // ln speaks TLS
	done chan struct{} // closed when the serving goroutine has returned
}

// Serve listens on addr now, so that the caller learns the real port (addr
// may end in ":0"), and serves in a goroutine until Close:
//
//   - /metrics: m's registry (404 when m is nil);
//   - /healthz: 200 "ok" while the process serves;
//   - /readyz: 200 "ready" when ready returns nil (or ready is nil), else
//     503 with the error's text.
//
// addr's host must be loopback: 127.0.0.0/8, ::1 or localhost. Anything
// else, including an empty host (all interfaces), fails with ErrNotLoopback
// before listening; ServeExposed is the explicit way around that.
func Serve(addr string, m *Metrics, ready func() error) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: address %q: %w", addr, err)
	}
	if !loopbackHost(host) {
		return nil, fmt.Errorf("%w: %q (use 127.0.0.1, ::1 or localhost)", ErrNotLoopback, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen: %w", err)
	}
	// "localhost" is resolved by the system; insist on what was bound.
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("%w: %q resolved to %s", ErrNotLoopback, addr, ln.Addr())
	}
	return start(ln, m, ready, false), nil
}

// ServeExposed is Serve without the loopback check: it listens on addr
// whatever its host, ":9090" (all interfaces) included. Use it only when
// metrics must be scraped from another machine and the network is trusted.
func ServeExposed(addr string, m *Metrics, ready func() error) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen: %w", err)
	}
	return start(ln, m, ready, false), nil
}

// loopbackHost reports whether host names a loopback interface without
// asking a resolver.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func start(ln net.Listener, m *Metrics, ready func() error, tls bool) *Server {
	mux := newMux(m, ready)
	s := &Server{
		ln:  ln,
		mux: mux,
		tls: tls,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s
}

func newMux(m *Metrics, ready func() error) *http.ServeMux {
	mux := http.NewServeMux()
	if reg := m.Registry(); reg != nil {
		mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(reg,
			promhttp.HandlerFor(reg, promhttp.HandlerOpts{
				// One failing collector must not hide all the others.
				ErrorHandling: promhttp.ContinueOnError,
				Registry:      reg,
			})))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil {
			if err := ready(); err != nil {
				writeText(w, http.StatusServiceUnavailable, err.Error())
				return
			}
		}
		writeText(w, http.StatusOK, "ready")
	})
	return mux
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

// Handle serves pattern (http.ServeMux syntax) with h beside /metrics,
// /healthz and /readyz: the operator's web page (bootstrap/operator/ui)
// shares this listener. It may be called while serving.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Private reports whether only this machine can read what is served: the
// listener speaks TLS, or is bound to a loopback address. A secret such
// as the API token may cross it only then.
func (s *Server) Private() bool {
	if s.tls {
		return true
	}
	tcp, ok := s.ln.Addr().(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// TLS reports whether the listener speaks TLS.
func (s *Server) TLS() bool { return s.tls }

// Addr is the address actually listened on, such as "127.0.0.1:40123".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting connections, lets requests in flight finish until
// ctx ends (then closes their connections), and returns once the serving
// goroutine has exited. It returns ctx's error if requests had to be cut
// off. Calling it again is harmless.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	return nil
}
