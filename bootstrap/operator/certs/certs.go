package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// Kind is what a certificate may be used for.
type Kind int

const (
	// Server certificates authenticate a listener to its clients.
	Server Kind = iota
	// Client certificates authenticate a caller to a server that requires
	// them (mutual TLS).
	Client
	// Peer certificates do both: a process of distributed mode listens
	// (remote, its API) and dials (the other members, the cloud) with one
	// certificate.
	Peer
)

// ErrNoHosts is returned when a server certificate would name no host.
var ErrNoHosts = errors.New("certs: a server certificate needs at least one host name or IP address")

// clockSkew backdates NotBefore so that a certificate made on one machine
// is valid at once on another whose clock is a little behind.
const clockSkew = time.Hour

// Pair is a certificate and its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name, valid from now for validFor,
// that may sign leaf certificates only (path length zero).
func NewCA(name string, now time.Time, validFor time.Duration) (*Pair, error) {
	tmpl, err := template(name, now, validFor)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	return sign(tmpl, nil)
}

// Issue makes a certificate of kind signed by ca, named name, valid from
// now for validFor (cut at the CA's own expiry). hosts (DNS names or IP
// addresses) become its subject alternative names; a server certificate
// needs at least one.
func (ca *Pair) Issue(kind Kind, name string, hosts []string, now time.Time, validFor time.Duration) (*Pair, error) {
	tmpl, err := template(name, now, validFor)
	if err != nil {
		return nil, err
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	switch kind {
	case Server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case Peer:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	default:
		return nil, fmt.Errorf("certs: unknown kind %d", kind)
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(h); {
		case h == "":
		case ip != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if kind != Client && len(tmpl.IPAddresses)+len(tmpl.DNSNames) == 0 {
		return nil, ErrNoHosts
	}
	return sign(tmpl, ca)
}

func template(name string, now time.Time, validFor time.Duration) (*x509.Certificate, error) {
	if validFor <= 0 {
		return nil, fmt.Errorf("certs: validity %v must be positive", validFor)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"tether"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(validFor),
	}, nil
}

// sign makes a key for tmpl and signs it with parent (itself when nil).
func sign(tmpl *x509.Certificate, parent *Pair) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("certs: signing %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, Key: key}, nil
}

// CertPEM is the certificate as a PEM block.
func (p *Pair) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Cert.Raw})
}

// KeyPEM is the private key as a PKCS#8 PEM block.
func (p *Pair) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
