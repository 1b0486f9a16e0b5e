package metrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// selfSigned is a server certificate for 127.0.0.1 that is its own root.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "metrics test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestServeTLS(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	if _, err := ServeTLS("127.0.0.1:0", nil, nil, nil); err == nil {
		t.Fatal("ServeTLS without a configuration: no error")
	}
	cert, pool := selfSigned(t)
	s, err := ServeTLS("127.0.0.1:0", nil, nil, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeServer(t, s)

	plain := newClient(t)
	if resp, err := plain.Get("http://" + s.Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain-text GET /healthz answered 200 by a TLS server")
		}
	}
	untrusting := newClient(t)
	if resp, err := untrusting.Get("https://" + s.Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("GET over TLS without trusting the certificate succeeded")
	}
	trusting := newClient(t)
	trusting.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
	if code, body := get(t, trusting, "https://"+s.Addr()+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("GET /healthz over TLS: %d %q", code, body)
	}
}
