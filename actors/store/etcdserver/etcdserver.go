package etcdserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The limits etcd is started with. etcd's defaults (128 operations and
// 1.5 MiB per transaction) are too small for one Apply of a fleet's
// desired state; the store's EtcdConfig uses these by default, and etcd
// 3.4 accepts them (it warns that the request size is above the 10 MiB it
// recommends).
const (
	MaxTxnOps       = 200_000
	MaxRequestBytes = 128 << 20
)

const (
	// startTimeout bounds the wait for a started etcd to answer.
	startTimeout = 15 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 10 * time.Second
	// startAttempts bounds the fresh ports Start tries when another
	// process took the ones it picked.
	startAttempts = 5
	// compactRetention is how many revisions of history etcd keeps.
	compactRetention = 100_000
)

// ErrMissingBinary is matched by Start's error when the etcd binary is not
// installed.
var ErrMissingBinary = errors.New("etcdserver: etcd binary not found")

// Config says how to run etcd.
type Config struct {
	// Dir is etcd's data directory; it is created (mode 0700) if missing.
	Dir string
	// Binary is the etcd executable, a path or a name looked up in PATH;
	// "" is "etcd".
	Binary string
	// Log receives etcd's output (both streams); nil discards it. The
	// last lines are kept for the errors either way.
	Log io.Writer
	// TLS, if set, serves etcd's clients over mutual TLS only: https
	// client URLs, etcd's certificate and key, and the CA every client's
	// certificate must chain to (--client-cert-auth). Start's own health
	// checks present the same certificate (it must allow client use, as
	// `tether certs --process` issues them).
	TLS *TLSFiles
}

// TLSFiles are the PEM files of etcd's client TLS.
type TLSFiles struct{ Cert, Key, CA string }

// Server is one etcd process (and its successors after Restart). Its
// methods are safe for concurrent use.
type Server struct {
	cfg    Config
	binary string // resolved path
	name   string // --name, kept across restarts

	probe *http.Client // health checks (with TLS: as a client of it)

	mu     sync.Mutex
	client string // URL, fixed after Start
	peer   string
	proc   *process // nil when not running
	out    *tail    // of the latest run
}

// process is one run of etcd.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait's, readable once done is closed
}

// Start runs etcd on free loopback ports with cfg's data directory and
// returns once it answers, at most about 15 s later. It fails, with etcd's
// last output lines, if etcd exits or does not answer in time; if the
// binary is missing, the error (matching ErrMissingBinary) names it and
// says how to install it.
func Start(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("etcdserver: Config.Dir is empty: etcd needs a data directory")
	}
	if cfg.Binary == "" {
		cfg.Binary = "etcd"
	}
	path, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("%w: %q (%v): install it with `apt-get install etcd-server` (Debian, Ubuntu) or put etcd in PATH", ErrMissingBinary, cfg.Binary, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdserver: data directory: %w", err)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	s := &Server{cfg: cfg, binary: path, name: "tether-" + hex.EncodeToString(id[:]), probe: probe}
	scheme := "http://"
	if cfg.TLS != nil {
		tc, err := clientTLS(*cfg.TLS)
		if err != nil {
			return nil, err
		}
		s.probe = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tc}}
		scheme = "https://"
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		s.client = scheme + loopback(ports[0])
		s.peer = "http://" + loopback(ports[1])
		err = s.start()
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			return nil, err
		}
	}
}

// Endpoints returns the client URLs, for the etcd client.
func (s *Server) Endpoints() []string { return []string{s.client} }

// Dir returns the data directory.
func (s *Server) Dir() string { return s.cfg.Dir }

// Pid returns the running etcd's process ID, 0 if it is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Stop ends etcd cleanly: SIGTERM, then SIGKILL if it still runs after a
// grace of 10 s. It returns once the process is gone. Stopping a stopped
// server does nothing.
func (s *Server) Stop() error { return s.end(syscall.SIGTERM) }

// Kill ends etcd at once (SIGKILL), as a crash would, and returns once the
// process is gone. What etcd acknowledged is on disk (it syncs its log
// before it answers).
func (s *Server) Kill() error { return s.end(syscall.SIGKILL) }

func (s *Server) end(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc = nil
	_ = p.cmd.Process.Signal(sig) // fails only if it already exited
	if sig != syscall.SIGKILL {
		grace := time.NewTimer(stopGrace)
		defer grace.Stop()
		select {
		case <-p.done:
			return nil
		case <-grace.C:
			_ = p.cmd.Process.Kill()
		}
	}
	<-p.done
	return nil
}

// Restart starts etcd again on the same data directory and the same
// ports, stopping it first (cleanly) if it runs, and returns once it
// answers. If a port is briefly still taken, it tries again until the
// start timeout.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start()
		if err == nil || !errors.Is(err, errPortTaken) || time.Now().After(deadline) {
			return err
		}
		wait := time.NewTimer(100 * time.Millisecond) // a backoff, not a synchronization: the port is someone else's
		<-wait.C
	}
}

// start runs one etcd process on s's ports and waits until it answers;
// errPortTaken if etcd could not bind one of them.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("etcdserver: etcd is already running")
	}
	out := newTail(s.cfg.Log)
	s.out = out
	args := []string{"--name", s.name,
		"--data-dir", s.cfg.Dir,
		"--listen-client-urls", s.client,
		"--advertise-client-urls", s.client,
		"--listen-peer-urls", s.peer,
		"--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", s.name + "=" + s.peer,
		"--initial-cluster-state", "new",
		"--max-txn-ops", strconv.Itoa(MaxTxnOps),
		"--max-request-bytes", strconv.Itoa(MaxRequestBytes),
		// Keep the last compactRetention revisions of history (etcd
		// checks every 5 minutes): without compaction every write stays
		// forever and etcd stops at its 2 GiB quota.
		"--auto-compaction-mode", "revision",
		"--auto-compaction-retention", strconv.Itoa(compactRetention),
		"--logger", "zap",
		"--log-outputs", "stderr",
	}
	if t := s.cfg.TLS; t != nil {
		args = append(args, "--cert-file", t.Cert, "--key-file", t.Key, "--trusted-ca-file", t.CA, "--client-cert-auth")
	}
	cmd := exec.Command(s.binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdserver: start %s: %w", s.binary, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := waitReady(s.probe, s.client, p, startTimeout); err != nil {
		_ = cmd.Process.Kill()
		<-p.done
		if out.contains("address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("etcdserver: etcd on %s (data %s): %w; its last output:\n%s", s.client, s.cfg.Dir, err, out.last())
	}
	s.proc = p
	return nil
}

// LastOutput returns etcd's last output lines, of its latest run.
func (s *Server) LastOutput() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.last()
}
