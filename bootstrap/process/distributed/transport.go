package distributed

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/bootstrap/process/remoting"
	cloudremote "github.com/tether/tether/cloud/remote"
)

// RemoteConfig is where a process listens for Proto.Actor remote traffic
// and how it secures it (bootstrap/process/remoting: loopback unless AllowRemote,
// mutual TLS when files are given, every received message screened).
type RemoteConfig struct {
	// Addr is host:port; port 0 picks a free one.
	Addr        string
	AllowRemote bool
	// Advertise, if set, is the address other processes reach this one
	// at, when it differs from Addr (a proxy in front, a NAT).
	Advertise string
	TLS       remoting.TLSFiles
}

func (r RemoteConfig) build(log logrus.FieldLogger) (*remote.Config, error) {
	addr := r.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return remoting.Configure(remoting.Config{Addr: addr, AllowRemote: r.AllowRemote, Advertise: r.Advertise, TLS: r.TLS, Log: log})
}

// check decides on the configuration before anything starts.
func (r RemoteConfig) check() error {
	addr := r.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return remoting.Check(remoting.Config{Addr: addr, AllowRemote: r.AllowRemote, Advertise: r.Advertise, TLS: r.TLS})
}

// connect is how every process of distributed mode starts: it dials the
// cloud, builds its remote configuration and makes its actor system (remote
// is started later, with the cluster). who names the process in errors.
func connect(who, cloudAddr string, ct ClientTLS, rcfg RemoteConfig, log *logrus.Logger) (*cloudremote.Client, *remote.Config, *actor.ActorSystem, error) {
	if cloudAddr == "" {
		// A CSI driver is the cloud: nothing to dial here.
		rc, err := rcfg.build(log)
		if err != nil {
			return nil, nil, nil, err
		}
		return nil, rc, actor.NewActorSystem(actor.WithLoggerFactory(slogrus.LoggerFactory(log))), nil
	}
	dial, err := ct.dialOptions(cloudAddr)
	if err != nil {
		return nil, nil, nil, err
	}
	cl, err := cloudremote.Dial(cloudAddr, dial...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: cloud: %w", who, err)
	}
	rc, err := rcfg.build(log)
	if err != nil {
		return cl, nil, nil, err
	}
	return cl, rc, actor.NewActorSystem(actor.WithLoggerFactory(slogrus.LoggerFactory(log))), nil
}

// ClientTLS is how a process dials a TLS service (the cloud): the CA that
// signed the server's certificate, and this process's own pair for mutual
// TLS. All empty: plain text.
type ClientTLS struct {
	CA, Cert, Key string
	ServerName    string
}

func (c ClientTLS) dialOptions(addr string) ([]grpc.DialOption, error) {
	if c.CA == "" && c.Cert == "" && c.Key == "" {
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	}
	name := c.ServerName
	if name == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("cloud address %q: %w", addr, err)
		}
		name = host
	}
	tc, err := certs.ClientConfig(c.CA, c.Cert, c.Key, name)
	if err != nil {
		return nil, fmt.Errorf("cloud TLS: %w", err)
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tc))}, nil
}

// apiTLS loads the API's server TLS (nil: plain text).
func apiTLS(f process.TLSFiles) (*tls.Config, error) {
	if f.Cert == "" && f.Key == "" {
		return nil, nil
	}
	tc, err := certs.ServerConfig(f.Cert, f.Key, f.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("API TLS: %w", err)
	}
	return tc, nil
}
