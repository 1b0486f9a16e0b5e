package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

func writeSet(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	if _, err := WriteSet(dir, SetOptions{Hosts: hosts, ValidFor: 30 * day, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWriteSetModesAndChain(t *testing.T) {
	dir := writeSet(t, "127.0.0.1", "localhost", "myhost")
	for name, mode := range map[string]os.FileMode{
		CAFile: 0o644, CAKeyFile: 0o600, ServerFile: 0o644, ServerKeyFile: 0o600, ClientFile: 0o644, ClientKeyFile: 0o600,
	} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	pool, cas, err := LoadPool(filepath.Join(dir, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if !cas[0].IsCA {
		t.Fatal("ca.pem is not a CA")
	}
	_, srv, _ := LoadPool(filepath.Join(dir, ServerFile))
	for _, h := range []string{"127.0.0.1", "localhost", "myhost"} {
		if _, err := srv[0].Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err != nil {
			t.Errorf("server certificate for %s: %v", h, err)
		}
	}
	if _, err := srv[0].Verify(x509.VerifyOptions{DNSName: "otherhost", Roots: pool}); err == nil {
		t.Error("server certificate verifies for a host it does not name")
	}
	_, cli, _ := LoadPool(filepath.Join(dir, ClientFile))
	if _, err := cli[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := cli[0].Verify(x509.VerifyOptions{Roots: pool}); err == nil {
		t.Error("client certificate verifies as a server certificate")
	}
}

func TestWriteSetRefusesOverwriteUnlessForced(t *testing.T) {
	dir := writeSet(t, "localhost")
	before, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	_, err := WriteSet(dir, SetOptions{Hosts: []string{"localhost"}, ValidFor: day, Now: time.Now()})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), CAKeyFile) {
		t.Fatalf("second WriteSet: %v, want ErrExists naming %s", err, CAKeyFile)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, CAKeyFile)); string(after) != string(before) {
		t.Fatal("refused WriteSet changed ca-key.pem")
	}
	// One file there is enough to refuse, and nothing is written.
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, ClientKeyFile), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSet(dir2, SetOptions{Hosts: []string{"localhost"}, ValidFor: day, Now: time.Now()}); !errors.Is(err, ErrExists) {
		t.Fatalf("WriteSet over client-key.pem: %v, want ErrExists", err)
	}
	if _, err := os.Stat(filepath.Join(dir2, CAFile)); err == nil {
		t.Fatal("refused WriteSet wrote ca.pem")
	}
	if _, err := WriteSet(dir, SetOptions{Hosts: []string{"localhost"}, ValidFor: day, Now: time.Now(), Force: true}); err != nil {
		t.Fatalf("forced WriteSet: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, CAKeyFile)); string(after) == string(before) {
		t.Fatal("forced WriteSet left ca-key.pem as it was")
	}
}

func TestIssueNeedsHostsAndValidity(t *testing.T) {
	ca, err := NewCA("ca", time.Now(), day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Issue(Server, "s", nil, time.Now(), day); !errors.Is(err, ErrNoHosts) {
		t.Errorf("server certificate without hosts: %v, want ErrNoHosts", err)
	}
	if _, err := NewCA("ca", time.Now(), 0); err == nil {
		t.Error("CA valid for 0: no error")
	}
	leaf, err := ca.Issue(Client, "c", nil, time.Now(), 10*day)
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Error("leaf outlives its CA")
	}
}

// handshake runs a TLS handshake over a loopback connection (a kernel
// buffer between the two, so neither side's alert blocks the other) and
// returns the server's and the client's errors.
func handshake(t *testing.T, server, client *tls.Config) (error, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	deadline := time.Now().Add(10 * time.Second)
	srvErr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer conn.Close()
		conn.SetDeadline(deadline)
		s := tls.Server(conn, server)
		err = s.Handshake()
		if err == nil {
			// TLS 1.3 clients finish before the server has checked their
			// certificate: the client learns of a refusal on its first read.
			_, err = s.Write([]byte{1})
		}
		srvErr <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	c := tls.Client(conn, client)
	cliErr := c.Handshake()
	if cliErr == nil {
		_, cliErr = c.Read(make([]byte, 1))
	}
	conn.Close()
	return <-srvErr, cliErr
}

func TestServerAndClientConfigs(t *testing.T) {
	dir := writeSet(t, "127.0.0.1", "localhost")
	other := writeSet(t, "localhost")
	p := func(d, n string) string { return filepath.Join(d, n) }
	plain, err := ServerConfig(p(dir, ServerFile), p(dir, ServerKeyFile), "")
	if err != nil {
		t.Fatal(err)
	}
	mutual, err := ServerConfig(p(dir, ServerFile), p(dir, ServerKeyFile), p(dir, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	client := func(ca, cert, key, name string) *tls.Config {
		t.Helper()
		c, err := ClientConfig(ca, cert, key, name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tt := range []struct {
		name            string
		server, client  *tls.Config
		wantSrv, wantCl bool // want an error
	}{
		{"trusted CA", plain, client(p(dir, CAFile), "", "", "127.0.0.1"), false, false},
		{"pinned server certificate", plain, client(p(dir, ServerFile), "", "", "localhost"), false, false},
		{"other CA", plain, client(p(other, CAFile), "", "", "127.0.0.1"), true, true},
		{"name not in certificate", plain, client(p(dir, CAFile), "", "", "otherhost"), true, true},
		{"mutual with client certificate", mutual, client(p(dir, CAFile), p(dir, ClientFile), p(dir, ClientKeyFile), "localhost"), false, false},
		{"mutual without client certificate", mutual, client(p(dir, CAFile), "", "", "localhost"), true, true},
		{"mutual with a foreign client certificate", mutual, client(p(dir, CAFile), p(other, ClientFile), p(other, ClientKeyFile), "localhost"), true, true},
		{"server certificate as client certificate", mutual, client(p(dir, CAFile), p(dir, ServerFile), p(dir, ServerKeyFile), "localhost"), true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srvErr, cliErr := handshake(t, tt.server, tt.client)
			if (srvErr != nil) != tt.wantSrv || (cliErr != nil) != tt.wantCl {
				t.Fatalf("server: %v, client: %v; want errors: server %v, client %v", srvErr, cliErr, tt.wantSrv, tt.wantCl)
			}
		})
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	dir := writeSet(t, "localhost")
	p := func(n string) string { return filepath.Join(dir, n) }
	if _, err := ServerConfig(p(ServerFile), p(ClientKeyFile), ""); err == nil {
		t.Error("certificate with another's key: no error")
	}
	if _, err := ServerConfig(p(ServerFile), "", ""); err == nil {
		t.Error("certificate without key: no error")
	}
	if _, _, err := LoadPool(p(CAKeyFile)); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("key as CA: %v", err)
	}
	// Expired.
	old := filepath.Join(t.TempDir(), "old")
	if _, err := WriteSet(old, SetOptions{Hosts: []string{"localhost"}, ValidFor: day, Now: time.Now().Add(-10 * day)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerConfig(filepath.Join(old, ServerFile), filepath.Join(old, ServerKeyFile), ""); err == nil || !strings.Contains(err.Error(), "not now") {
		t.Errorf("expired certificate: %v", err)
	}
}

func TestServerName(t *testing.T) {
	dir := writeSet(t, "myhost", "10.1.2.3")
	_, leaf, _ := LoadPool(filepath.Join(dir, ServerFile))
	_, ca, _ := LoadPool(filepath.Join(dir, CAFile))
	for _, tt := range []struct {
		host  string
		certs []*x509.Certificate
		want  string
	}{
		{"10.1.2.3", leaf, "10.1.2.3"},
		{"myhost", leaf, "myhost"},
		{"0.0.0.0", leaf, "myhost"},
		{"127.0.0.1", ca, "127.0.0.1"},
	} {
		if got := ServerName(tt.host, tt.certs); got != tt.want {
			t.Errorf("ServerName(%s) = %s, want %s", tt.host, got, tt.want)
		}
	}
}
