package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/bootstrap/process"
)

// registerUpTLS adds tether up's TLS flags to fs.
func registerUpTLS(fs *pflag.FlagSet, cfg *process.UpConfig) {
	fs.StringVar(&cfg.TLS.Cert, "tls-cert", "", "serve the API over TLS with this certificate (PEM; required beyond loopback; make one with: tether certs)")
	fs.StringVar(&cfg.TLS.Key, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.StringVar(&cfg.TLS.ClientCA, "tls-client-ca", "", "require API clients to present a certificate signed by this CA (PEM): mutual TLS")
	fs.StringVar(&cfg.MetricsTLS.Cert, "metrics-tls-cert", "", "serve metrics over TLS with this certificate (default beyond loopback: --tls-cert)")
	fs.StringVar(&cfg.MetricsTLS.Key, "metrics-tls-key", "", "the private key (PEM) of --metrics-tls-cert")
	fs.BoolVar(&cfg.InsecureMetrics, "insecure-metrics", false, "serve metrics in plain text even beyond loopback (logs a warning)")
}

// checkUpExposure refuses, as a usage error, a tether up that would serve
// beyond loopback in plain text.
func checkUpExposure(cfg process.UpConfig) error {
	if err := process.CheckExposure(cfg); err != nil {
		return usageError{err}
	}
	return nil
}

// clientTLS are the client commands' TLS flags.
type clientTLS struct {
	ca, cert, key, serverName string
}

func (t *clientTLS) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.ca, "tls-ca", "", "speak TLS and trust this CA (PEM) for the API's certificate (default with a tls:// address from <data-dir>/api-addr: <data-dir>/"+process.APICertFile+")")
	fs.StringVar(&t.cert, "tls-client-cert", "", "present this client certificate (PEM) to an API started with --tls-client-ca")
	fs.StringVar(&t.key, "tls-client-key", "", "the private key (PEM) of --tls-client-cert")
	fs.StringVar(&t.serverName, "tls-server-name", "", "the name the API's certificate must hold (default: the address's host)")
}

// transport decides how to reach addr (an --addr, or the contents of
// <data-dir>/api-addr when fromDataDir): the target to dial and its
// credentials. TLS is used when the address says tls:// or any TLS flag
// is given; then it is TLS or nothing, never plain text.
func (f *clientFlags) transport(addr string, fromDataDir bool) (string, grpc.DialOption, bool, error) {
	target, useTLS := process.ParseAPIAddr(addr)
	t := f.tls
	if t.ca != "" || t.cert != "" || t.key != "" || t.serverName != "" {
		useTLS = true
	}
	if !useTLS {
		if !process.Loopback(target) {
			// The bearer token goes with every call: never in plain text
			// beyond this machine (tether up serves TLS only there).
			return "", nil, false, fmt.Errorf("refusing to send the API token in plain text to %s, beyond loopback: use tls://%s with --tls-ca FILE (the CA that signed tether up's --tls-cert)", target, target)
		}
		return target, grpc.WithTransportCredentials(insecure.NewCredentials()), false, nil
	}
	if (t.cert == "") != (t.key == "") {
		return "", nil, true, usageError{errors.New("--tls-client-cert and --tls-client-key go together")}
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return "", nil, true, fmt.Errorf("API address %q: %w", target, err)
	}
	ca, name := t.ca, t.serverName
	if ca == "" && fromDataDir {
		// tether up pinned its own certificate there for local clients.
		ca = filepath.Join(f.dataDir, process.APICertFile)
		_, pinned, err := certs.LoadPool(ca)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, true, fmt.Errorf("%s says the API speaks TLS but %s is missing: pass --tls-ca FILE (the CA that signed tether up's --tls-cert)", filepath.Join(f.dataDir, process.AddrFile), ca)
		}
		if err != nil {
			return "", nil, true, err
		}
		if name == "" {
			name = certs.ServerName(host, pinned)
		}
	}
	if name == "" {
		name = host
	}
	cfg, err := certs.ClientConfig(ca, t.cert, t.key, name)
	if err != nil {
		return "", nil, true, err
	}
	return target, grpc.WithTransportCredentials(credentials.NewTLS(cfg)), true, nil
}

// explainTLS adds to a failed call's error what to check when the
// failure is the transport's: a TLS mismatch between client and API.
func explainTLS(useTLS, clientCert bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
			if hint := tlsHint(s.Message(), useTLS, clientCert); hint != "" {
				return status.Error(codes.Unavailable, s.Message()+"; check: "+hint)
			}
		}
		return err
	}
}

// tlsHint maps a transport failure to what to check, or "" if it is not
// about TLS. (No hint may say "requires " or "accepts ": isUsage would
// take the error for a usage error.)
func tlsHint(msg string, useTLS, clientCert bool) string {
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	// A connection that broke after the server's first frame (a server
	// that died mid-call: "error reading from server") was past any TLS
	// handshake: no TLS hint applies.
	if has("error reading from server", "transport is closing") {
		return ""
	}
	switch {
	case !useTLS && has("server preface"):
		return "the API may speak TLS: use its tls:// address (tether up writes it in <data-dir>/api-addr) or pass --tls-ca FILE"
	case !useTLS:
		return ""
	case has("does not look like a TLS handshake"):
		return "the API speaks plain text, not TLS: drop --tls-ca and the tls:// prefix, or start tether up with --tls-cert and --tls-key"
	case has("certificate required"):
		return "the API asks for a client certificate (tether up --tls-client-ca): pass --tls-client-cert FILE and --tls-client-key FILE"
	case has("unknown certificate authority", "bad certificate", "unsupported certificate"):
		return "the API refused the client certificate: it must be signed by the CA given to tether up with --tls-client-ca"
	case has("signed by unknown authority", "not standards compliant"):
		return "the API's certificate is not signed by the CA this client trusts: --tls-ca must name the CA that signed tether up's --tls-cert"
	case has("certificate is valid for", "doesn't contain any IP SANs"):
		return "the API's certificate does not hold the name dialed: pass --tls-server-name with a name it holds, or remake it with that host (tether certs --hosts)"
	case has("expired or is not yet valid"):
		return "the API's certificate is expired or not yet valid: check the clocks, or make a new one"
	case has("broken pipe", "connection reset", "EOF") && !clientCert:
		// Under TLS 1.3 a refused client certificate often shows as the
		// server closing the connection, not as an alert.
		return "the API closed the connection: it may ask for a client certificate (tether up --tls-client-ca): pass --tls-client-cert FILE and --tls-client-key FILE"
	case has("broken pipe", "connection reset", "EOF"):
		return "the API closed the connection: if it was started with --tls-client-ca, --tls-client-cert must be signed by that CA"
	case has("tls:", "x509:", "handshake"):
		return "the TLS handshake failed: check --tls-ca, --tls-server-name, --tls-client-cert and --tls-client-key"
	}
	return ""
}
