package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// ServerConfig loads a server's certificate (PEM, leaf first, optionally
// followed by intermediates) and its key. If clientCAFile is set, clients
// must present a certificate signed by a CA in it. A certificate that has
// expired, or is not valid yet, is refused at load rather than at the
// first handshake.
func ServerConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pool, _, err := LoadPool(clientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig trusts the certificates in caFile (the system's roots when
// caFile is ""), checks that the server's certificate names serverName,
// and presents certFile and keyFile (if set) as the client's certificate.
func ClientConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, _, err := LoadPool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := loadPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// LoadPool reads the PEM certificates in file, as a pool and as a list.
// A file holding no certificate is an error.
func LoadPool(file string) (*x509.CertPool, []*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: reading CA: %w", err)
	}
	pool := x509.NewCertPool()
	var list []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("certs: %s: %w", file, err)
		}
		pool.AddCert(c)
		list = append(list, c)
	}
	if len(list) == 0 {
		return nil, nil, fmt.Errorf("certs: %s holds no PEM certificate", file)
	}
	return pool, list, nil
}

// ServerName is the name a client should expect when it dials host and
// trusts certs: host itself if one of certs names it (or none names
// anything, as with a CA), else the first name the first naming
// certificate carries. The latter serves a pinned server certificate
// reached through an address it does not name (0.0.0.0, a second IP).
func ServerName(host string, certs []*x509.Certificate) string {
	for _, c := range certs {
		if c.VerifyHostname(host) == nil {
			return host
		}
	}
	for _, c := range certs {
		if len(c.DNSNames) > 0 {
			return c.DNSNames[0]
		}
		if len(c.IPAddresses) > 0 {
			return c.IPAddresses[0].String()
		}
	}
	return host
}

func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("certs: a certificate needs both its file and its key file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: loading %s and %s: %w", certFile, keyFile, err)
	}
	now := time.Now()
	if l := cert.Leaf; l != nil && (now.After(l.NotAfter) || now.Before(l.NotBefore)) {
		return tls.Certificate{}, fmt.Errorf("certs: %s is valid from %s to %s, not now", certFile, l.NotBefore.Format(time.RFC3339), l.NotAfter.Format(time.RFC3339))
	}
	return cert, nil
}
