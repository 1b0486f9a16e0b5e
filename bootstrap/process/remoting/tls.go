package remoting

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/bootstrap/operator/certs"
)

// ErrPlainDial is what a process without TLS gets when it dials beyond
// loopback (remote's endpoint writer logs it and gives the message up).
var ErrPlainDial = errors.New("remoting: dialing beyond loopback without TLS")

// transport is the pair of credentials a process runs on.
type transport struct {
	server, client credentials.TransportCredentials
}

// loadTLS loads t and checks, before any peer sees them, that the serving
// certificate has server usage, chains to CA and names host (when set),
// and that the dialing certificate has client usage and chains to CA:
// otherwise each mistake would show only as handshakes refused by peers.
// The client side leaves the server name empty: gRPC sets it, per dial,
// to the host of the address dialed.
func loadTLS(t TLSFiles, host string, log logrus.FieldLogger) (transport, error) {
	srv, err := certs.ServerConfig(t.Cert, t.Key, t.CA)
	if err != nil {
		return transport{}, fmt.Errorf("remoting TLS: %w", err)
	}
	cert, key := t.ClientCert, t.ClientKey
	if cert == "" {
		cert, key = t.Cert, t.Key
	}
	cli, err := certs.ClientConfig(t.CA, cert, key, "")
	if err != nil {
		return transport{}, fmt.Errorf("remoting TLS: %w", err)
	}
	if err := fit(srv.Certificates[0], srv.ClientCAs, x509.ExtKeyUsageServerAuth, host); err != nil {
		return transport{}, fmt.Errorf("%w: %s cannot serve peers: %v", ErrCertificate, t.Cert, err)
	}
	if err := fit(cli.Certificates[0], cli.RootCAs, x509.ExtKeyUsageClientAuth, ""); err != nil {
		hint := ""
		if t.ClientCert == "" {
			hint = " (give a client pair as ClientCert and ClientKey: tether certs makes client.pem)"
		}
		return transport{}, fmt.Errorf("%w: %s cannot authenticate this process to the peers it dials: %v%s", ErrCertificate, cert, err, hint)
	}
	return transport{server: loggedCreds{credentials.NewTLS(srv), log}, client: credentials.NewTLS(cli)}, nil
}

// fit verifies c as a peer would: chained to roots, for usage, naming
// host if host is set.
func fit(c tls.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage, host string) error {
	chain := make([]*x509.Certificate, len(c.Certificate))
	for i, der := range c.Certificate {
		x, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		chain[i] = x
	}
	inter := x509.NewCertPool()
	for _, x := range chain[1:] {
		inter.AddCert(x)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// loggedCreds logs every handshake the listener refuses: remote.Start
// discards gRPC's own log, so a peer refused for its certificate would
// otherwise leave no trace on this side.
type loggedCreds struct {
	credentials.TransportCredentials
	log logrus.FieldLogger
}

func (c loggedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	peer := conn.RemoteAddr().String()
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.log.WithFields(logrus.Fields{"peer": peer, "error": err}).Warn("remoting: refused a peer's TLS handshake")
	}
	return out, info, err
}

func (c loggedCreds) Clone() credentials.TransportCredentials {
	return loggedCreds{c.TransportCredentials.Clone(), c.log}
}

// plainDialOptions dial without TLS, and only loopback addresses.
func plainDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialLoopback),
	}
}

func dialLoopback(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Control: loopbackOnly}
	return d.DialContext(ctx, "tcp", addr)
}

// loopbackOnly refuses to connect to anything but a loopback address. It
// sees the address actually dialed, after name resolution.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %s", ErrPlainDial, address)
	}
	return nil
}
