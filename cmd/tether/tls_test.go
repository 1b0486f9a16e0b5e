package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/messages"
)

// runBin runs the binary and returns its exit code and output.
func runBin(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(binary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatal(err)
	return 0, ""
}

// The bug: `tether up --allow-remote` served the API (and its bearer
// token) and the metrics on every interface in plain text. Each refusal
// comes before anything listens or touches the data directory.
func TestUpRefusesPlainTextBeyondLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	data := filepath.Join(t.TempDir(), "data")
	for _, tt := range []struct {
		args    []string
		mention []string
	}{
		{[]string{"--allow-remote", "--api-addr", "0.0.0.0:0"}, []string{"--tls-cert", "--tls-key"}},
		{[]string{"--allow-remote", "--api-addr", ":0", "--tls-cert", "s.pem"}, []string{"--tls-key"}},
		{[]string{"--allow-remote", "--metrics-addr", "0.0.0.0:0"}, []string{"--tls-cert", "--metrics-tls-cert", "--insecure-metrics"}},
		{[]string{"--api-addr", "0.0.0.0:0", "--tls-cert", "s.pem", "--tls-key", "k.pem"}, []string{"--allow-remote"}},
		{[]string{"--tls-client-ca", "ca.pem"}, []string{"--tls-client-ca needs --tls-cert"}},
		{[]string{"--insecure-metrics", "--metrics-tls-cert", "s.pem", "--metrics-tls-key", "k.pem"}, []string{"contradict"}},
	} {
		code, out := runBin(t, append([]string{"up", "--data-dir", data}, tt.args...)...)
		if code != exitUsage {
			t.Errorf("tether up %v: exit %d, want %d\n%s", tt.args, code, exitUsage, out)
		}
		for _, m := range tt.mention {
			if !strings.Contains(out, m) {
				t.Errorf("tether up %v says %q, want it to mention %s", tt.args, out, m)
			}
		}
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused tether up touched its data directory: %v", err)
	}
}

func TestCertsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := filepath.Join(t.TempDir(), "certs")
	if code, out := runBin(t, "certs", "--out", dir, "--hosts", "127.0.0.1,localhost", "--days", "2"); code != 0 {
		t.Fatalf("tether certs: exit %d\n%s", code, out)
	}
	for _, name := range []string{certs.CAKeyFile, certs.ServerKeyFile, certs.ClientKeyFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", name, st.Mode(), err)
		}
	}
	_, leaf, err := certs.LoadPool(filepath.Join(dir, certs.ServerFile))
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(leaf[0].NotAfter); left > 48*time.Hour || left < 47*time.Hour {
		t.Errorf("--days 2: certificate valid for another %s", left)
	}
	before, _ := os.ReadFile(filepath.Join(dir, certs.CAKeyFile))
	if code, out := runBin(t, "certs", "--out", dir); code != exitError || !strings.Contains(out, "--force") {
		t.Errorf("tether certs over existing files: exit %d, %q; want %d naming --force", code, out, exitError)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, certs.CAKeyFile)); string(after) != string(before) {
		t.Error("a refused tether certs replaced ca-key.pem")
	}
	if code, out := runBin(t, "certs", "--out", dir, "--force"); code != 0 {
		t.Errorf("tether certs --force: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"certs"}, {"certs", "--out", dir, "--days", "0"}, {"certs", "--out", t.TempDir(), "--hosts", ""}} {
		if code, out := runBin(t, args...); code != exitUsage {
			t.Errorf("tether %v: exit %d, want %d\n%s", args, code, exitUsage, out)
		}
	}
}

// upTLS starts `tether up` on loopback with args, waits until `tether get
// nodes` answers with clientArgs, and stops it (SIGTERM, then a bounded
// wait) when the test ends.
func upTLS(t *testing.T, data string, args, clientArgs []string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"up", "--data-dir", data, "--api-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--nodes", "1", "--log-level", "warn"}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("tether up: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("tether up did not stop within 30s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("tether up output:\n%s", out.String())
		}
	})
	testkit.Eventually(t, 20*time.Second, func() bool {
		_, err := run(t, data, append([]string{"get", "nodes"}, clientArgs...)...)
		return err == nil
	}, "tether up answering over TLS")
	return out
}

func apiAddr(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, process.AddrFile))
	if err != nil {
		t.Fatal(err)
	}
	addr, useTLS := process.ParseAPIAddr(string(b))
	if !useTLS {
		t.Fatalf("%s = %q, want a tls:// address", process.AddrFile, b)
	}
	return addr
}

func wantRefused(t *testing.T, data, mention string, args ...string) {
	t.Helper()
	out, err := run(t, data, args...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(out, mention) {
		t.Errorf("tether %v: %v, %q; want exit %d mentioning %q", args, err, out, exitError, mention)
	}
}

// With --tls-cert, a client on the same machine with --data-dir just
// works (upTLS's wait is that call); a plain-text client and one trusting
// another CA are refused and told what to check.
func TestUpTLSClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir, other, data := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{dir, other} {
		if code, out := runBin(t, "certs", "--out", d, "--hosts", "localhost,127.0.0.1"); code != 0 {
			t.Fatalf("tether certs: %s", out)
		}
	}
	out := upTLS(t, data, []string{"--tls-cert", filepath.Join(dir, certs.ServerFile), "--tls-key", filepath.Join(dir, certs.ServerKeyFile)}, nil)
	if !strings.Contains(out.String(), "gRPC over TLS") {
		t.Errorf("tether up does not say the API speaks TLS:\n%s", out.String())
	}
	addr := apiAddr(t, data)
	wantRefused(t, data, "may speak TLS", "get", "nodes", "--addr", addr)
	wantRefused(t, data, "--tls-ca must name the CA", "get", "nodes", "--addr", "tls://"+addr, "--tls-ca", filepath.Join(other, certs.CAFile))
	wantRefused(t, data, "--tls-server-name", "get", "nodes", "--addr", "tls://"+addr, "--tls-ca", filepath.Join(dir, certs.CAFile), "--tls-server-name", "otherhost")
	if out, err := run(t, data, "get", "nodes", "--addr", "tls://"+addr, "--tls-ca", filepath.Join(dir, certs.CAFile)); err != nil {
		t.Errorf("get nodes trusting the CA: %v\n%s", err, out)
	}
	// TLS expected and the certificate to trust gone: an error, never
	// plain text.
	if err := os.Remove(filepath.Join(data, process.APICertFile)); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, data, "--tls-ca", "get", "nodes")
}

// With --tls-client-ca, only clients with a certificate signed by that CA
// get through.
func TestUpMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir, other, data := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{dir, other} {
		if code, out := runBin(t, "certs", "--out", d, "--hosts", "localhost,127.0.0.1"); code != 0 {
			t.Fatalf("tether certs: %s", out)
		}
	}
	p := func(d, n string) string { return filepath.Join(d, n) }
	upTLS(t, data,
		[]string{"--tls-cert", p(dir, certs.ServerFile), "--tls-key", p(dir, certs.ServerKeyFile), "--tls-client-ca", p(dir, certs.CAFile)},
		[]string{"--tls-client-cert", p(dir, certs.ClientFile), "--tls-client-key", p(dir, certs.ClientKeyFile)})
	wantRefused(t, data, "--tls-client-cert FILE", "get", "nodes")
	wantRefused(t, data, "--tls-client-ca", "get", "nodes", "--tls-client-cert", p(other, certs.ClientFile), "--tls-client-key", p(other, certs.ClientKeyFile))
}

// Every transport failure tether knows gets a hint, and no hint reads as
// a usage error (exit 2) to isUsage.
func TestTLSHints(t *testing.T) {
	for _, tt := range []struct {
		msg                string
		useTLS, clientCert bool
		mention            string
	}{
		{`connection error: desc = "error reading server preface: EOF"`, false, false, "tls://"},
		{`authentication handshake failed: tls: first record does not look like a TLS handshake`, true, false, "plain text"},
		{`error reading server preface: remote error: tls: certificate required`, true, false, "--tls-client-cert"},
		{`remote error: tls: unknown certificate authority`, true, true, "--tls-client-ca"},
		{`write: broken pipe`, true, false, "--tls-client-cert"},
		{`write: connection reset by peer`, true, true, "--tls-client-ca"},
		{`tls: failed to verify certificate: x509: certificate signed by unknown authority`, true, false, "--tls-ca"},
		{`x509: certificate is valid for localhost, not otherhost`, true, false, "--tls-server-name"},
		{`x509: certificate has expired or is not yet valid: current time ...`, true, false, "clocks"},
		{`tls: handshake failure`, true, false, "--tls-ca"},
	} {
		hint := tlsHint(tt.msg, tt.useTLS, tt.clientCert)
		if !strings.Contains(hint, tt.mention) {
			t.Errorf("%q: hint %q, want it to mention %s", tt.msg, hint, tt.mention)
		}
	}
	if hint := tlsHint("connection refused", false, false); hint != "" {
		t.Errorf("connection refused without TLS: hint %q, want none", hint)
	}
}

// A client never sends the token in plain text beyond loopback: the call
// is refused before anything is dialed.
func TestClientRefusesPlainTextBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"10.0.0.5:7070", false},
		{"myhost:7070", false},
		{"[2001:db8::1]:7070", false},
		{"127.0.0.1:7070", true},
		{"localhost:7070", true},
		{"[::1]:7070", true},
	} {
		f := clientFlags{dataDir: dir}
		_, _, _, err := f.transport(tt.addr, false)
		if tt.ok != (err == nil) {
			t.Errorf("transport(%s): %v, want ok=%v", tt.addr, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "plain text") {
			t.Errorf("transport(%s): %v does not say why", tt.addr, err)
		}
	}
	code, out := execute("", "get", "nodes", "--addr", "10.0.0.5:7070", "--token", "secret", "--data-dir", dir)
	if code != exitError || !strings.Contains(out, "tls://10.0.0.5:7070") {
		t.Fatalf("tether get --addr 10.0.0.5:7070: exit %d\n%s", code, out)
	}
}

// dyingAPI stops its server in the middle of an Apply.
type dyingAPI struct {
	messages.UnimplementedTetherServer
	stop func()
}

func (d *dyingAPI) Apply(ctx context.Context, _ *messages.ApplyRequest) (*messages.ApplyResponse, error) {
	go d.stop()
	<-ctx.Done()
	return nil, ctx.Err()
}

// A plain-text server that dies mid-apply gets no TLS hint: the
// connection was up, so TLS is not what failed.
func TestServerDyingMidApplyNoTLSHint(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	messages.RegisterTetherServer(g, &dyingAPI{stop: g.Stop})
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	file := writeFile(t, "n.yaml", "kind: Node\nname: n1\n")
	code, out := execute("", "apply", "-f", file, "--addr", lis.Addr().String(), "--token", "t")
	if code != 1 || !strings.Contains(out, "Unavailable") || strings.Contains(out, "TLS") || strings.Contains(out, "check:") {
		t.Fatalf("apply to a dying server: exit %d: %s; want Unavailable and no TLS hint", code, out)
	}
	t.Logf("%s", out)
	for _, msg := range []string{"error reading from server: EOF", "error reading from server: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer", "transport is closing"} {
		for _, useTLS := range []bool{false, true} {
			if hint := tlsHint(msg, useTLS, false); hint != "" {
				t.Errorf("%q (TLS %v): hint %q, want none", msg, useTLS, hint)
			}
		}
	}
}
