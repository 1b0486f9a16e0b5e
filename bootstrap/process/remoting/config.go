package remoting

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
)

// Config is how one process (controller member or node agent) runs remote.
type Config struct {
	// Addr is where remote listens, host:port (port 0 picks a free one):
	// loopback unless AllowRemote.
	Addr        string
	AllowRemote bool
	// Advertise is the host:port peers dial to reach this process; every
	// PID it hands out carries it. Empty means the listener's own address,
	// which a wildcard listener (0.0.0.0, [::], ":port") cannot give, so
	// such an Addr needs Advertise, and Advertise needs Addr's fixed port.
	// Beyond loopback it needs AllowRemote and TLS as Addr does.
	Advertise string
	// TLS, if set, is mutual TLS in both directions; it is required
	// beyond loopback.
	TLS TLSFiles
	// Accept lists the protobuf packages whose messages peers may send;
	// empty means DefaultAccept(), and a list of its own must keep
	// Proto.Actor's packages. AcceptAnyType accepts instead every type
	// linked into the binary (unknown types are refused either way).
	Accept        []string
	AcceptAnyType bool
	// Log receives rejected messages and refused handshakes; nil means
	// logrus.StandardLogger().
	Log logrus.FieldLogger
}

// TLSFiles names the PEM files of a process's mutual TLS. Every process
// of a deployment trusts the same CA.
type TLSFiles struct {
	// Cert (leaf first, then any intermediates) and Key are what the
	// listener serves: Cert needs server usage and must name the host
	// peers dial (Advertise's, else Addr's).
	Cert, Key string
	// CA holds the certificates peers' certificates must chain to, in
	// both directions.
	CA string
	// ClientCert and ClientKey, if set, are presented when this process
	// dials; otherwise Cert and Key are, and then Cert needs client usage
	// too. tether certs makes one pair of each usage: give server.pem as
	// Cert and client.pem as ClientCert.
	ClientCert, ClientKey string
}

func (t TLSFiles) set() bool { return t != TLSFiles{} }

// DefaultAccept is what Config.Accept defaults to: tether's own messages
// (package tether.messages) and Proto.Actor's own (actor, remote,
// cluster), which remote and the cluster send among themselves.
func DefaultAccept() []string {
	return []string{"tether.messages", "actor", "remote", "cluster"}
}

// Refusals of Check and Configure; each is wrapped with what to change.
var (
	ErrNotLoopback = errors.New("remoting: address beyond loopback without AllowRemote")
	ErrExposed     = errors.New("remoting: remote beyond loopback without mutual TLS")
	ErrTLSFiles    = errors.New("remoting: incomplete TLS files")
	ErrAdvertise   = errors.New("remoting: no address peers can dial")
	ErrCertificate = errors.New("remoting: certificate unfit for remote")
)

// Check decides, without reading a file, whether c may run as asked.
func Check(c Config) error {
	t := c.TLS
	if t.set() && (t.Cert == "" || t.Key == "" || t.CA == "") {
		return fmt.Errorf("%w: a certificate, its key and the peers' CA go together", ErrTLSFiles)
	}
	if (t.ClientCert == "") != (t.ClientKey == "") {
		return fmt.Errorf("%w: a client certificate and its key go together", ErrTLSFiles)
	}
	host, port, err := splitAddr(c.Addr)
	if err != nil {
		return fmt.Errorf("remoting: listen address: %w", err)
	}
	addrs := []string{c.Addr}
	if c.Advertise != "" {
		if _, aport, err := splitAddr(c.Advertise); err != nil || aport == 0 {
			return fmt.Errorf("%w: advertised address %q is not host:port with a port", ErrAdvertise, c.Advertise)
		}
		if port == 0 {
			return fmt.Errorf("%w: listening on %q picks a port, which %q cannot name: listen on a fixed port", ErrAdvertise, c.Addr, c.Advertise)
		}
		addrs = append(addrs, c.Advertise)
	}
	for _, a := range addrs {
		if Loopback(a) {
			continue
		}
		if !c.AllowRemote {
			return fmt.Errorf("%w: %q: use 127.0.0.1, ::1 or localhost, or allow remote peers (with mutual TLS)", ErrNotLoopback, a)
		}
		if !t.set() {
			return fmt.Errorf("%w: %q needs a certificate, its key and the peers' CA (tether certs makes them)", ErrExposed, a)
		}
	}
	if ip := net.ParseIP(host); (host == "" || ip != nil && ip.IsUnspecified()) && c.Advertise == "" {
		return fmt.Errorf("%w: listening on %q: give the host:port peers dial as the advertised address", ErrAdvertise, c.Addr)
	}
	return nil
}

// Configure checks c, loads its certificates and returns the remote
// configuration to start with, for remote.NewRemote(sys, rc).Start() or
// cluster.Configure(name, provider, lookup, rc, ...). Callers may set
// other fields of it (Kinds, batch sizes, MaxRetryCount) but must leave
// its DialOptions and ServerOptions as they are: remote.WithDialOptions
// and remote.WithServerOptions replace the lists, and a second
// credentials option would replace the TLS.
func Configure(c Config) (*remote.Config, error) {
	if err := Check(c); err != nil {
		return nil, err
	}
	log := c.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	accept := c.Accept
	switch {
	case c.AcceptAnyType:
		accept = nil
	case len(accept) == 0:
		accept = DefaultAccept()
	}
	g := &guard{screen: newScreen(accept), log: log}
	server := []grpc.ServerOption{grpc.ChainStreamInterceptor(g.stream), grpc.ChainUnaryInterceptor(g.unary)}
	dial := plainDialOptions()
	if c.TLS.set() {
		creds, err := loadTLS(c.TLS, certHost(c), log)
		if err != nil {
			return nil, err
		}
		server = append(server, grpc.Creds(creds.server))
		dial = []grpc.DialOption{grpc.WithTransportCredentials(creds.client)}
	}
	dial = append(dial, grpc.WithChainStreamInterceptor(closeFailedConn))
	opts := []remote.ConfigOption{remote.WithServerOptions(server...), remote.WithDialOptions(dial...)}
	if c.Advertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(c.Advertise))
	}
	host, port, _ := splitAddr(c.Addr) // Check parsed it
	return remote.Configure(host, port, opts...), nil
}

// certHost is the host whose name the serving certificate must carry:
// the advertised one, else the listener's if it is an IP literal (a name
// such as localhost is advertised as whatever address it resolves to).
func certHost(c Config) string {
	a := c.Advertise
	if a == "" {
		a = c.Addr
	}
	host, _, _ := net.SplitHostPort(a)
	if c.Advertise == "" && net.ParseIP(host) == nil {
		return ""
	}
	return host
}

// Loopback reports whether addr's host names a loopback interface
// (localhost or a loopback address), without asking a resolver: the rule
// of process.Loopback, which this package may not import.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

func splitAddr(addr string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port of %q: %w", addr, err)
	}
	return host, int(n), nil
}
