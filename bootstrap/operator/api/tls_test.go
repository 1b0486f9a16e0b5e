package api

import (
	"crypto/tls"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/messages"
)

// The bug: --allow-remote served the API, bearer token and all, in plain
// text on every interface. Beyond loopback, TLS is now required; the
// refusal comes before listening, so nothing binds 0.0.0.0 here.
func TestServeRefusesPlainTextBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		if _, err := Serve(addr, "tok", nil, nil, true); !errors.Is(err, ErrPlainRemote) {
			t.Errorf("Serve(%s, allowRemote): %v, want ErrPlainRemote", addr, err)
		}
		if _, err := ServeTLS(addr, "tok", nil, nil, true, nil); !errors.Is(err, ErrPlainRemote) {
			t.Errorf("ServeTLS(%s, allowRemote, no TLS): %v, want ErrPlainRemote", addr, err)
		}
		if _, err := ServeTLS(addr, "tok", nil, nil, false, &tls.Config{Certificates: []tls.Certificate{{}}}); err == nil {
			t.Errorf("ServeTLS(%s, TLS, not allowRemote): no error", addr)
		}
	}
}

// tlsServer serves f's controller over TLS on loopback next to f's own
// plain server; it stops before f's cleanup stops the controller.
func (f *fixture) tlsServer(cfg *tls.Config) string {
	f.t.Helper()
	srv, err := ServeTLS("127.0.0.1:0", f.token, f.ctl, f.cloud, false, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			f.t.Error(err)
		}
	})
	return srv.Addr()
}

// get calls Get with f's token through a new connection made with creds.
func (f *fixture) get(addr string, creds credentials.TransportCredentials) error {
	f.t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close()
	_, err = messages.NewTetherClient(conn).Get(f.ctx(f.token), &messages.GetRequest{Kind: "nodes"})
	return err
}

func clientTLS(t *testing.T, ca, cert, key string) credentials.TransportCredentials {
	t.Helper()
	cfg, err := certs.ClientConfig(ca, cert, key, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return credentials.NewTLS(cfg)
}

func certSet(t *testing.T) func(string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := certs.WriteSet(dir, certs.SetOptions{Hosts: []string{"127.0.0.1", "localhost"}, ValidFor: time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return func(name string) string { return filepath.Join(dir, name) }
}

func TestTLSClients(t *testing.T) {
	f := newFixture(t)
	mine, other := certSet(t), certSet(t)
	cfg, err := certs.ServerConfig(mine(certs.ServerFile), mine(certs.ServerKeyFile), "")
	if err != nil {
		t.Fatal(err)
	}
	addr := f.tlsServer(cfg)
	if err := f.get(addr, insecure.NewCredentials()); status.Code(err) != codes.Unavailable {
		t.Errorf("plain-text client: %v, want Unavailable", err)
	}
	if err := f.get(addr, clientTLS(t, other(certs.CAFile), "", "")); status.Code(err) != codes.Unavailable {
		t.Errorf("client trusting another CA: %v, want Unavailable", err)
	}
	if err := f.get(addr, clientTLS(t, mine(certs.CAFile), "", "")); err != nil {
		t.Errorf("client trusting the CA: %v", err)
	}
	if err := f.get(addr, clientTLS(t, mine(certs.ServerFile), "", "")); err != nil {
		t.Errorf("client trusting the server's own certificate: %v", err)
	}
}

func TestMutualTLS(t *testing.T) {
	f := newFixture(t)
	mine, other := certSet(t), certSet(t)
	cfg, err := certs.ServerConfig(mine(certs.ServerFile), mine(certs.ServerKeyFile), mine(certs.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	addr := f.tlsServer(cfg)
	ca := mine(certs.CAFile)
	for _, tt := range []struct {
		name      string
		cert, key string
		ok        bool
	}{
		{"no client certificate", "", "", false},
		{"client certificate of another CA", other(certs.ClientFile), other(certs.ClientKeyFile), false},
		{"client certificate of the CA", mine(certs.ClientFile), mine(certs.ClientKeyFile), true},
	} {
		err := f.get(addr, clientTLS(t, ca, tt.cert, tt.key))
		if tt.ok && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !tt.ok && status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want Unavailable", tt.name, err)
		}
	}
}
