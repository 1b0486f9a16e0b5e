package distributed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	runpprof "runtime/pprof"
	"sync"
	"time"

	"github.com/tether/tether/actors/metrics"
)

// What a member shows of itself to whoever measures it (tether bench
// --distributed): its metrics (MemberConfig.MetricsAddr) and its profiles
// (MemberConfig.PprofAddr), each on loopback only.

// serveDebug starts the metrics and profiling endpoints cfg asks for.
func (m *Member) serveDebug(cfg MemberConfig) (err error) {
	if cfg.MetricsAddr != "" {
		ready := func() error {
			if !m.Controller.Restored() {
				return errors.New("restoring the volumes")
			}
			return nil
		}
		if m.msrv, err = metrics.Serve(cfg.MetricsAddr, m.metrics, ready); err != nil {
			return fmt.Errorf("controller: --metrics-addr: %w", err)
		}
		if err := m.servePage(cfg); err != nil {
			return err
		}
	}
	if cfg.PprofAddr != "" {
		if m.pprof, err = servePprof(cfg.PprofAddr); err != nil {
			return fmt.Errorf("controller: --pprof-addr: %w", err)
		}
	}
	return nil
}

// stopDebug stops what serveDebug started.
func (m *Member) stopDebug() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	m.page.Close() // first: it ends the streams the listener's Close waits for
	if m.msrv != nil {
		errs = append(errs, m.msrv.Close(ctx))
	}
	if m.pprof != nil {
		errs = append(errs, m.pprof.close(ctx))
	}
	return errors.Join(errs...)
}

// MetricsAddr is where the metrics endpoint listens ("" without one).
func (m *Member) MetricsAddr() string {
	if m.msrv == nil {
		return ""
	}
	return m.msrv.Addr()
}

// pprofServer serves Go's profiles, and a CPU profile of the time between
// two requests: POST /debug/cpuprofile/start begins it, POST
// /debug/cpuprofile/stop ends it and answers with it (go tool pprof's
// format). Go's own /debug/pprof/profile needs its length in advance; a
// bench phase's is not known until it ends.
type pprofServer struct {
	ln  net.Listener
	srv *http.Server
	mu  sync.Mutex
	cpu *bytes.Buffer // the profile running; nil: none
}

// servePprof listens on addr, whose host must be a loopback address.
func servePprof(addr string) (*pprofServer, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%q: profiles are served on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("%q resolved to %s, not loopback", addr, ln.Addr())
	}
	s := &pprofServer{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /debug/cpuprofile/start", s.start)
	mux.HandleFunc("POST /debug/cpuprofile/stop", s.stop)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *pprofServer) start(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cpu != nil {
		http.Error(w, "a CPU profile is running already", http.StatusConflict)
		return
	}
	buf := &bytes.Buffer{}
	if err := runpprof.StartCPUProfile(buf); err != nil {
		http.Error(w, err.Error(), http.StatusConflict) // /debug/pprof/profile's, running
		return
	}
	s.cpu = buf
	w.WriteHeader(http.StatusNoContent)
}

func (s *pprofServer) stop(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cpu == nil {
		http.Error(w, "no CPU profile is running", http.StatusConflict)
		return
	}
	runpprof.StopCPUProfile()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(s.cpu.Bytes())
	s.cpu = nil
}

func (s *pprofServer) close(ctx context.Context) error {
	s.mu.Lock()
	if s.cpu != nil {
		runpprof.StopCPUProfile()
		s.cpu = nil
	}
	s.mu.Unlock()
	if err := s.srv.Shutdown(ctx); err != nil {
		return errors.Join(err, s.srv.Close())
	}
	return nil
}
