package distributed

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/tether/tether/bootstrap/operator/certs"
)

// EtcdTLS is how a member or an agent dials etcd over mutual TLS: the CA
// that signed etcd's certificate and this process's own pair (`tether
// certs --process etcd,controller-1,...` issues them all). All empty:
// plain text, which only an etcd on this machine (loopback) may be
// dialed with: the store and the membership would otherwise travel in
// the clear, and whoever reaches etcd could join the cluster or rewrite
// the desired state.
type EtcdTLS struct{ CA, Cert, Key string }

// set reports whether any file is given.
func (t EtcdTLS) set() bool { return t.CA != "" || t.Cert != "" || t.Key != "" }

// etcdClient checks endpoints against t and returns them as URLs (https
// with TLS) and the client's TLS configuration (nil: plain text).
func etcdClient(endpoints []string, t EtcdTLS) ([]string, *tls.Config, error) {
	if t.set() && (t.CA == "" || t.Cert == "" || t.Key == "") {
		return nil, nil, fmt.Errorf("etcd TLS: give --etcd-tls-ca, --etcd-tls-cert and --etcd-tls-key together (mutual TLS)")
	}
	var tc *tls.Config
	if t.set() {
		var err error
		if tc, err = certs.ClientConfig(t.CA, t.Cert, t.Key, ""); err != nil {
			return nil, nil, fmt.Errorf("etcd TLS: %w", err)
		}
	}
	out := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		raw := e
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, nil, fmt.Errorf("etcd endpoint %q: want host:port or a URL", e)
		}
		switch {
		case tc != nil && u.Scheme == "http" && strings.Contains(e, "://"):
			return nil, nil, fmt.Errorf("etcd endpoint %q: http with --etcd-tls-*: give https:// or host:port", e)
		case tc != nil:
			u.Scheme = "https"
		case u.Scheme == "https":
			return nil, nil, fmt.Errorf("etcd endpoint %q: https needs --etcd-tls-ca, --etcd-tls-cert and --etcd-tls-key", e)
		case !loopbackHost(u.Hostname()):
			return nil, nil, fmt.Errorf("etcd endpoint %q is not on this machine: the store and the membership would travel in plain text (anyone reaching etcd could join the cluster or rewrite the desired state); give --etcd-tls-ca, --etcd-tls-cert and --etcd-tls-key", e)
		}
		out = append(out, u.String())
	}
	return out, tc, nil
}

// loopbackHost reports whether host is this machine's loopback.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
