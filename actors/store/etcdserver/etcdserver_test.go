package etcdserver_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/tether/tether/actors/store/etcdserver"
	"github.com/tether/tether/actors/store/etcdserver/etcdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client returns an etcd client of s that the test closes.
func client(t *testing.T, s *etcdserver.Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func put(t *testing.T, c *clientv3.Client, k, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, k, v); err != nil {
		t.Fatal(err)
	}
}

// get reads k, retrying until deadline while etcd is unreachable (a client
// reconnecting after a restart).
func get(t *testing.T, c *clientv3.Client, k string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.Get(ctx, k)
		cancel()
		if err == nil {
			if len(resp.Kvs) == 0 {
				return ""
			}
			return string(resp.Kvs[0].Value)
		}
		if time.Now().After(deadline) {
			t.Fatalf("get %s: %v", k, err)
		}
	}
}

// gone reports whether no process has pid (Stop and Kill reap theirs).
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

func TestStartStop(t *testing.T) {
	var log strings.Builder
	var mu sync.Mutex
	s, err := etcdserver.Start(etcdserver.Config{Dir: filepath.Join(t.TempDir(), "made", "data"), Log: lockedWriter{&mu, &log}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	eps := s.Endpoints()
	if len(eps) != 1 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
		t.Fatalf("Endpoints = %v, want one URL on 127.0.0.1", eps)
	}
	put(t, client(t, s), "k", "v")
	if fi, err := os.Stat(s.Dir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, %v; want it created with mode 0700", fi, err)
	}
	pid := s.Pid()
	if pid == 0 || gone(pid) {
		t.Fatalf("Pid = %d, want a running process", pid)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) || s.Pid() != 0 {
		t.Fatalf("process %d still there after Stop", pid)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), "serving client traffic") {
		t.Fatalf("Log got %d bytes without etcd's ready line", log.Len())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestRestart: after a clean stop or a kill, etcd comes back on the same
// ports with what it acknowledged, and a client made before reconnects.
func TestRestart(t *testing.T) {
	s := etcdtest.Start(t)
	c := client(t, s)
	eps := s.Endpoints()
	for i, end := range []struct {
		name string
		end  func() error
	}{
		{"kill", s.Kill},
		{"stop", s.Stop},
		{"running", func() error { return nil }}, // Restart stops it first
	} {
		t.Run(end.name, func(t *testing.T) {
			key := "k" + end.name
			put(t, c, key, end.name)
			old := s.Pid()
			if err := end.end(); err != nil {
				t.Fatal(err)
			}
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
			if !gone(old) || s.Pid() == old {
				t.Fatalf("old process %d still there, new %d", old, s.Pid())
			}
			if !slices.Equal(s.Endpoints(), eps) {
				t.Fatalf("Endpoints = %v after restart %d, want %v", s.Endpoints(), i, eps)
			}
			if got := get(t, c, key); got != end.name {
				t.Fatalf("%s = %q after restart, want %q", key, got, end.name)
			}
		})
	}
}

// TestRestartWaitsForItsPort: while another process holds its client
// port, Restart keeps trying; it succeeds once the port is free.
func TestRestartWaitsForItsPort(t *testing.T) {
	refused := make(chan struct{})
	var once sync.Once
	s, err := etcdserver.Start(etcdserver.Config{Dir: t.TempDir(), Log: watch("address already in use", func() { once.Do(func() { close(refused) }) })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", strings.TrimPrefix(s.Endpoints()[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Restart() }()
	select {
	case <-refused:
	case err := <-done:
		t.Fatalf("Restart returned %v while its port was taken", err)
	case <-time.After(20 * time.Second):
		t.Fatal("etcd never reported its port taken")
	}
	_ = l.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Restart still waiting 30 s after its port was freed")
	}
	put(t, client(t, s), "k", "v")
}

// watch is a Log that calls fn whenever etcd's output has s in one write.
func watch(s string, fn func()) writerFunc {
	return func(p []byte) (int, error) {
		if strings.Contains(string(p), s) {
			fn()
		}
		return len(p), nil
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestParallelStarts: servers started at once get distinct ports and all
// serve.
func TestParallelStarts(t *testing.T) {
	const n = 3
	servers := make([]*etcdserver.Server, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := etcdserver.Start(etcdserver.Config{Dir: filepath.Join(t.TempDir(), "d")})
			if err != nil {
				t.Error(err)
				return
			}
			servers[i] = s
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range servers {
			if s != nil {
				_ = s.Stop()
			}
		}
	})
	if t.Failed() {
		return
	}
	seen := map[string]bool{}
	for _, s := range servers {
		ep := s.Endpoints()[0]
		if seen[ep] {
			t.Fatalf("two servers on %s", ep)
		}
		seen[ep] = true
		put(t, client(t, s), "k", ep)
	}
}

func TestMissingBinary(t *testing.T) {
	_, err := etcdserver.Start(etcdserver.Config{Dir: t.TempDir(), Binary: "etcd-not-installed-here"})
	if !errors.Is(err, etcdserver.ErrMissingBinary) {
		t.Fatalf("err = %v, want ErrMissingBinary", err)
	}
	for _, says := range []string{"etcd-not-installed-here", "apt-get install etcd-server"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("err = %q, want it to say %q", err, says)
		}
	}
}

// TestFailedStartQuotesOutput: an etcd that exits at once is reported with
// its last output lines, at once.
func TestFailedStartQuotesOutput(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "etcd")
	script := "#!/bin/sh\nfor i in $(seq 1 50); do echo \"line $i\"; done\necho 'fatal: no luck' >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := etcdserver.Start(etcdserver.Config{Dir: t.TempDir(), Binary: fake})
	if err == nil {
		t.Fatal("Start of an etcd that exits succeeded")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Start took %v to see etcd exit", took)
	}
	for _, says := range []string{"exited", "exit status 3", "fatal: no luck", "line 50"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("err = %q, want it to say %q", err, says)
		}
	}
	if strings.Contains(err.Error(), "line 1\n") {
		t.Errorf("err quotes the whole output, want the last lines: %q", err)
	}
}
