package remoting

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/bootstrap/operator/certs"
)

func TestCheck(t *testing.T) {
	full := TLSFiles{Cert: "c.pem", Key: "k.pem", CA: "ca.pem"}
	for _, tc := range []struct {
		name string
		c    Config
		want error // nil: accepted; errAny: refused, no sentinel
	}{
		{"loopback", Config{Addr: "127.0.0.1:0"}, nil},
		{"localhost", Config{Addr: "localhost:7946"}, nil},
		{"IPv6 loopback", Config{Addr: "[::1]:0"}, nil},
		{"loopback over TLS", Config{Addr: "127.0.0.1:0", TLS: full}, nil},
		{"beyond loopback", Config{Addr: "10.0.0.5:7946"}, ErrNotLoopback},
		{"beyond loopback in plain text", Config{Addr: "10.0.0.5:7946", AllowRemote: true}, ErrExposed},
		{"beyond loopback over mutual TLS", Config{Addr: "10.0.0.5:7946", AllowRemote: true, TLS: full}, nil},
		{"wildcard without TLS", Config{Addr: "0.0.0.0:7946", AllowRemote: true, Advertise: "10.0.0.5:7946"}, ErrExposed},
		{"wildcard, advertised", Config{Addr: "0.0.0.0:7946", AllowRemote: true, TLS: full, Advertise: "10.0.0.5:7946"}, nil},
		{"wildcard, not advertised", Config{Addr: "0.0.0.0:7946", AllowRemote: true, TLS: full}, ErrAdvertise},
		{"empty host, not advertised", Config{Addr: ":7946", AllowRemote: true, TLS: full}, ErrAdvertise},
		{"IPv6 wildcard, not advertised", Config{Addr: "[::]:7946", AllowRemote: true, TLS: full}, ErrAdvertise},
		{"advertised with a picked port", Config{Addr: "0.0.0.0:0", AllowRemote: true, TLS: full, Advertise: "10.0.0.5:7946"}, ErrAdvertise},
		{"advertised without a port", Config{Addr: "0.0.0.0:7946", AllowRemote: true, TLS: full, Advertise: "10.0.0.5"}, ErrAdvertise},
		{"advertised beyond loopback", Config{Addr: "127.0.0.1:7946", Advertise: "10.0.0.5:7946"}, ErrNotLoopback},
		{"advertised beyond loopback in plain text", Config{Addr: "127.0.0.1:7946", AllowRemote: true, Advertise: "10.0.0.5:7946"}, ErrExposed},
		{"certificate without key", Config{Addr: "127.0.0.1:0", TLS: TLSFiles{Cert: "c.pem", CA: "ca.pem"}}, ErrTLSFiles},
		{"certificate without CA", Config{Addr: "127.0.0.1:0", TLS: TLSFiles{Cert: "c.pem", Key: "k.pem"}}, ErrTLSFiles},
		{"CA alone", Config{Addr: "127.0.0.1:0", TLS: TLSFiles{CA: "ca.pem"}}, ErrTLSFiles},
		{"client certificate without key", Config{Addr: "127.0.0.1:0", TLS: TLSFiles{Cert: "c.pem", Key: "k.pem", CA: "ca.pem", ClientCert: "cc.pem"}}, ErrTLSFiles},
		{"not host:port", Config{Addr: "127.0.0.1"}, errAny},
		{"port out of range", Config{Addr: "127.0.0.1:70000"}, errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.c)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == errAny && err == nil, tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Fatalf("Check: %v, want %v", err, tc.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// Beyond loopback with AllowRemote and mutual TLS, Configure accepts and
// builds options for both sides; nothing listens until remote starts.
func TestConfigureBeyondLoopback(t *testing.T) {
	dir := certSet(t, "192.0.2.10")
	rc, err := Configure(Config{Addr: "192.0.2.10:7946", AllowRemote: true, TLS: tlsFiles(dir)})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "192.0.2.10" || rc.Port != 7946 || rc.AdvertisedHost != "" {
		t.Errorf("listens on %s:%d advertising %q", rc.Host, rc.Port, rc.AdvertisedHost)
	}
	// Interceptors and credentials; credentials replacing remote's
	// default plain-text dial option, and the interceptor that closes
	// failed connections.
	if len(rc.ServerOptions) != 3 || len(rc.DialOptions) != 2 {
		t.Errorf("%d server options and %d dial options, want 3 and 2", len(rc.ServerOptions), len(rc.DialOptions))
	}
	rc, err = Configure(Config{Addr: "0.0.0.0:7946", AllowRemote: true, Advertise: "192.0.2.10:7946", TLS: tlsFiles(dir)})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "0.0.0.0" || rc.AdvertisedHost != "192.0.2.10:7946" {
		t.Errorf("listens on %s advertising %q", rc.Host, rc.AdvertisedHost)
	}
}

func TestConfigurePlain(t *testing.T) {
	rc, err := Configure(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// Interceptors; plain credentials, the loopback-only dialer and the
	// interceptor that closes failed connections.
	if len(rc.ServerOptions) != 2 || len(rc.DialOptions) != 3 {
		t.Errorf("%d server options and %d dial options, want 2 and 3", len(rc.ServerOptions), len(rc.DialOptions))
	}
}

// Certificates that peers would refuse are refused before starting.
func TestConfigureChecksCertificates(t *testing.T) {
	dir := certSet(t, "127.0.0.1")
	other := certSet(t, "127.0.0.1")
	f := tlsFiles(dir)
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"serving certificate naming another host", Config{Addr: "127.0.0.2:7946", TLS: f}, "cannot serve"},
		{"advertised host not named", Config{Addr: "0.0.0.0:7946", AllowRemote: true, Advertise: "192.0.2.99:7946", TLS: f}, "cannot serve"},
		{"client certificate serving", Config{Addr: loopback, TLS: TLSFiles{Cert: f.ClientCert, Key: f.ClientKey, CA: f.CA}}, "cannot serve"},
		{"server certificate dialing", Config{Addr: loopback, TLS: TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA}}, "ClientCert"},
		{"another CA", Config{Addr: loopback, TLS: TLSFiles{Cert: f.Cert, Key: f.Key, CA: filepath.Join(other, certs.CAFile), ClientCert: f.ClientCert, ClientKey: f.ClientKey}}, "cannot serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Configure(tc.c)
			if !errors.Is(err, ErrCertificate) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Configure: %v, want %v saying %q", err, ErrCertificate, tc.want)
			}
		})
	}
	if _, err := Configure(Config{Addr: loopback, TLS: TLSFiles{Cert: "missing.pem", Key: "missing-key.pem", CA: f.CA}}); err == nil {
		t.Fatal("Configure with missing files succeeded")
	}
}
